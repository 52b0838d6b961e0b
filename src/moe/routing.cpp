// Routing (softmax top-k and DeepSeek-V3 group-limited sigmoid gating), layouts, token
// payloads, and the single-process reference of dispatch + combine. No MPI here.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "attain/moe.hpp"
#include "bench/rng.hpp"
#include "core/util.hpp"

namespace attain::moe {

namespace {

// Indices of the k largest values (ties: lower index first), in descending order.
std::vector<int> top_indices(const std::vector<double>& v, int k) {
  std::vector<int> order(v.size());
  std::iota(order.begin(), order.end(), 0);
  std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int a, int b) {
    return v[idx(a)] > v[idx(b)] || (v[idx(a)] == v[idx(b)] && a < b);
  });
  order.resize(idx(k));
  return order;
}

}  // namespace

void GateConfig::validate() const {
  if (experts <= 0) throw InputError(fmt::format("experts must be positive (got {})", experts));
  if (topk <= 0 || topk > experts)
    throw InputError(
        fmt::format("top-k {} must be in 1..{} (the number of experts)", topk, experts));
  if (n_group <= 0 || experts % n_group != 0)
    throw InputError(fmt::format("n_group {} must divide the {} experts", n_group, experts));
  if (topk_group <= 0 || topk_group > n_group)
    throw InputError(fmt::format("topk_group {} must be in 1..n_group ({})", topk_group, n_group));
  if (topk > topk_group * (experts / n_group))
    throw InputError(fmt::format("top-k {} exceeds the {} experts of the {} kept groups", topk,
                                 topk_group * (experts / n_group), topk_group));
  if (!std::isfinite(routed_scaling_factor) || routed_scaling_factor <= 0)
    throw InputError("routed_scaling_factor must be positive");
}

GateConfig gate_from_model(const ModelConfig& m) {
  if (!m.is_moe()) throw InputError(fmt::format("model {} has no routed experts", m.name));
  GateConfig g;
  g.experts = static_cast<int>(m.experts);
  g.topk = static_cast<int>(m.experts_per_tok);
  g.n_group = static_cast<int>(m.n_group);
  g.topk_group = static_cast<int>(m.topk_group);
  g.routed_scaling_factor = m.routed_scaling_factor;
  g.sigmoid = m.scoring_func == "sigmoid";
  g.normalize = true;  // norm_topk_prob: DeepSeek-V3, Qwen3-MoE, Mixtral, GPT-OSS all renormalize
  return g;
}

Routing route(const GateConfig& g, std::span<const float> scores, std::span<const float> bias) {
  g.validate();
  const auto E = static_cast<std::size_t>(g.experts);
  if (scores.size() % E != 0)
    throw InputError(
        fmt::format("gate scores: {} values is not a multiple of {} experts", scores.size(), E));
  if (!bias.empty() && bias.size() != E)
    throw InputError(fmt::format("gate bias has {} values for {} experts", bias.size(), E));
  Routing r;
  r.tokens = static_cast<std::int64_t>(scores.size() / E);
  r.topk = g.topk;
  r.ids.assign(idx(r.tokens * g.topk), -1);
  r.weights.assign(idx(r.tokens * g.topk), 0.0f);
  const int per_group = g.experts / g.n_group;
  std::vector<double> prob(E), sel(E), gscore(idx(g.n_group));
  for (std::int64_t t = 0; t < r.tokens; ++t) {
    const float* s = scores.data() + idx(t) * E;
    for (std::size_t e = 0; e < E; ++e)
      if (!std::isfinite(s[e]))
        throw InputError(fmt::format("gate score of token {} expert {} is {}", t, e, s[e]));
    if (g.sigmoid) {
      for (std::size_t e = 0; e < E; ++e) {
        prob[e] = 1.0 / (1.0 + std::exp(-static_cast<double>(s[e])));
        sel[e] = prob[e] + (bias.empty() ? 0.0 : bias[e]);
      }
    } else {
      const double mx = *std::max_element(s, s + E);
      double sum = 0;
      for (std::size_t e = 0; e < E; ++e) sum += prob[e] = std::exp(static_cast<double>(s[e]) - mx);
      for (std::size_t e = 0; e < E; ++e) sel[e] = prob[e] /= sum;
    }
    if (g.n_group > 1) {
      // Group score: sum of the top two (sigmoid, DeepSeek-V3) or the max (softmax).
      for (int gi = 0; gi < g.n_group; ++gi) {
        std::vector<double> member(sel.begin() + gi * per_group,
                                   sel.begin() + (gi + 1) * per_group);
        std::sort(member.begin(), member.end(), std::greater<>());
        gscore[idx(gi)] = g.sigmoid && per_group >= 2 ? member[0] + member[1] : member[0];
      }
      std::vector<char> keep(idx(g.n_group), 0);
      for (int gi : top_indices(gscore, g.topk_group)) keep[idx(gi)] = 1;
      for (std::size_t e = 0; e < E; ++e)
        if (!keep[e / idx(per_group)]) sel[e] = -INFINITY;
    }
    const auto chosen = top_indices(sel, g.topk);
    double wsum = 0;
    for (int e : chosen) wsum += prob[idx(e)];
    for (int k = 0; k < g.topk; ++k) {
      const int e = chosen[idx(k)];
      double w = prob[idx(e)];
      if (g.normalize) w /= wsum + 1e-20;
      r.ids[idx(t * g.topk + k)] = e;
      r.weights[idx(t * g.topk + k)] = static_cast<float>(w * g.routed_scaling_factor);
    }
  }
  return r;
}

void validate_routing(const Routing& r, int experts) {
  const auto n = idx(r.tokens * r.topk);
  if (r.topk <= 0 || r.ids.size() != n || r.weights.size() != n)
    throw InputError(fmt::format("routing: {} ids and {} weights for {} tokens x top-{}",
                                 r.ids.size(), r.weights.size(), r.tokens, r.topk));
  for (std::int64_t t = 0; t < r.tokens; ++t) {
    for (int k = 0; k < r.topk; ++k) {
      const int e = r.id(t, k);
      if (e < -1 || e >= experts)
        throw InputError(fmt::format("routing: token {} slot {} has expert id {} (valid: -1..{})",
                                     t, k, e, experts - 1));
      if (e >= 0 && !std::isfinite(r.weight(t, k)))
        throw InputError(
            fmt::format("routing: token {} slot {} has weight {}", t, k, r.weight(t, k)));
      for (int k2 = 0; k2 < k; ++k2)
        if (e >= 0 && r.id(t, k2) == e)
          throw InputError(fmt::format("routing: token {} names expert {} twice", t, e));
    }
  }
}

std::vector<float> random_scores(std::int64_t tokens, int experts, std::uint64_t seed,
                                 double skew) {
  Rng rng(seed);
  std::vector<float> s(idx(tokens * experts));
  for (std::int64_t t = 0; t < tokens; ++t)
    for (int e = 0; e < experts; ++e) {
      // Sum of three uniforms: roughly normal, spread ~1.
      const float u = rng.uniform() + rng.uniform() + rng.uniform();
      s[idx(t * experts + e)] = u - static_cast<float>(skew * std::log(static_cast<double>(e + 1)));
    }
  return s;
}

Layout make_layout(const Routing& r, int experts, int ranks) {
  if (ranks <= 0 || experts <= 0 || experts % ranks != 0)
    throw InputError(
        fmt::format("{} experts cannot be split evenly over {} ranks", experts, ranks));
  validate_routing(r, experts);
  Layout l;
  l.ranks = ranks;
  l.experts = experts;
  l.experts_per_rank = experts / ranks;
  l.tokens = r.tokens;
  l.tokens_per_rank.assign(idx(ranks), 0);
  l.tokens_per_expert.assign(idx(experts), 0);
  l.in_rank.assign(idx(r.tokens * ranks), 0);
  for (std::int64_t t = 0; t < r.tokens; ++t)
    for (int k = 0; k < r.topk; ++k) {
      const int e = r.id(t, k);
      if (e < 0) continue;
      ++l.tokens_per_expert[idx(e)];
      l.in_rank[idx(t * ranks + e / l.experts_per_rank)] = 1;
    }
  for (std::int64_t t = 0; t < r.tokens; ++t)
    for (int rk = 0; rk < ranks; ++rk) l.tokens_per_rank[idx(rk)] += l.goes_to(t, rk) ? 1 : 0;
  return l;
}

std::string_view payload_name(Payload p) {
  return p == Payload::fp8 ? "fp8" : "bf16";
}

std::optional<Payload> parse_payload(std::string_view s) {
  if (s == "bf16") return Payload::bf16;
  if (s == "fp8" || s == "e4m3") return Payload::fp8;
  return std::nullopt;
}

double Tokens::value(std::int64_t row, std::int64_t j) const {
  if (dtype == Payload::bf16) {
    std::uint16_t h;
    std::memcpy(&h, data.data() + idx(row * row_bytes() + j * 2), 2);
    return bf16_to_f32(h);
  }
  return static_cast<double>(e4m3_table()[data[idx(row * hidden + j)]]) *
         scales[idx(row * scale_blocks() + j / kFp8Block)];
}

Tokens make_tokens(std::span<const std::uint16_t> x, std::int64_t rows, std::int64_t hidden,
                   Payload dt) {
  if (x.size() != idx(rows * hidden))
    throw InputError(fmt::format("tokens: {} values for {} x {}", x.size(), rows, hidden));
  Tokens tk;
  tk.dtype = dt;
  tk.rows = rows;
  tk.hidden = hidden;
  tk.data.resize(idx(rows * tk.row_bytes()));
  if (dt == Payload::bf16) {
    std::memcpy(tk.data.data(), x.data(), tk.data.size());
    return tk;
  }
  const std::int64_t kb = tk.scale_blocks();
  tk.scales.resize(idx(rows * kb));
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t b = 0; b < kb; ++b) {
      const std::int64_t j0 = b * kFp8Block, j1 = std::min(hidden, j0 + kFp8Block);
      float amax = 0;
      for (std::int64_t j = j0; j < j1; ++j)
        amax = std::max(amax, std::fabs(bf16_to_f32(x[idx(r * hidden + j)])));
      const float scale = amax > 0 ? amax / kFp8Max : 1.0f;
      tk.scales[idx(r * kb + b)] = scale;
      for (std::int64_t j = j0; j < j1; ++j)
        tk.data[idx(r * hidden + j)] = f32_to_e4m3(bf16_to_f32(x[idx(r * hidden + j)]) / scale);
    }
  return tk;
}

std::vector<std::uint16_t> sentinel_rows(std::int64_t rows, std::int64_t hidden, int rank,
                                         std::uint64_t seed) {
  std::vector<std::uint16_t> x(idx(rows * hidden));
  for (std::int64_t t = 0; t < rows; ++t) {
    Rng rng(seed ^ (static_cast<std::uint64_t>(rank) << 40) ^ static_cast<std::uint64_t>(t));
    std::uint16_t* row = x.data() + idx(t * hidden);
    // k/64 with |k| < 128 is exact in bf16 (and in e4m3 after a power-of-two-free scale is not:
    // fp8 rows are compared byte for byte against a rebuilt row instead).
    for (std::int64_t j = 0; j < hidden; ++j)
      row[idx(j)] = f32_to_bf16(static_cast<float>(static_cast<int>(rng.below(255)) - 127) / 64.0f);
    // Readable tags: rank and token id in the first values (exact small integers).
    if (hidden > 0) row[0] = f32_to_bf16(static_cast<float>(rank + 1));
    if (hidden > 1) row[1] = f32_to_bf16(static_cast<float>(t % 256));
    if (hidden > 2) row[2] = f32_to_bf16(static_cast<float>(t / 256));
  }
  return x;
}

std::int64_t ExpertRows::total_rows() const {
  return layout == GroupedLayout::contiguous ? offsets[local_experts] : local_experts * capacity;
}

std::pair<std::int64_t, std::int64_t> ExpertRows::group_rows(int g) const {
  if (layout == GroupedLayout::contiguous) return {offsets[g], offsets[g + 1]};
  return {g * capacity, g * capacity + counts[g]};
}

RowBuffer::RowBuffer(GroupedLayout layout, Payload dt, int local_experts, std::int64_t hidden,
                     std::int64_t capacity) {
  view_.layout = layout;
  view_.dtype = dt;
  view_.local_experts = local_experts;
  view_.hidden = hidden;
  view_.capacity = capacity;
  const std::int64_t rows =
      layout == GroupedLayout::contiguous ? capacity : capacity * local_experts;
  data_.assign(idx(rows * view_.row_bytes()), 0);
  scales_.assign(idx(rows * view_.scale_blocks()), 0.0f);
  index_.assign(idx(local_experts + 1), 0);
  out_.assign(idx(rows * hidden), 0);
  view_.data = data_.data();
  view_.scales = scales_.empty() ? nullptr : scales_.data();
  (layout == GroupedLayout::contiguous ? view_.offsets : view_.counts) = index_.data();
}

namespace {
double row_value(const ExpertRows& in, std::int64_t row, std::int64_t j) {
  if (in.dtype == Payload::bf16) {
    std::uint16_t h;
    std::memcpy(&h, in.data + idx((row * in.hidden + j) * 2), 2);
    return bf16_to_f32(h);
  }
  return static_cast<double>(e4m3_table()[in.data[idx(row * in.hidden + j)]]) *
         in.scales[idx(row * in.scale_blocks() + j / kFp8Block)];
}
}  // namespace

void apply_scale_experts(const ExpertRows& in, int first_expert, std::span<const float> scale,
                         std::uint16_t* y) {
  for (int g = 0; g < in.local_experts; ++g) {
    const auto [r0, r1] = in.group_rows(g);
    const double s = scale[idx(first_expert + g)];
    for (std::int64_t r = r0; r < r1; ++r)
      for (std::int64_t j = 0; j < in.hidden; ++j)
        y[idx(r * in.hidden + j)] = f32_to_bf16(static_cast<float>(s * row_value(in, r, j)));
  }
}

std::vector<double> reference_combine(const Routing& r, const Tokens& x,
                                      std::span<const float> scale) {
  std::vector<double> out(idx(r.tokens * x.hidden), 0.0);
  for (std::int64_t t = 0; t < r.tokens; ++t)
    for (int k = 0; k < r.topk; ++k) {
      const int e = r.id(t, k);
      if (e < 0) continue;
      const double f = static_cast<double>(r.weight(t, k)) * scale[idx(e)];
      // The expert output is rounded to bf16 (as the experts store it) before weighting.
      for (std::int64_t j = 0; j < x.hidden; ++j)
        out[idx(t * x.hidden + j)] +=
            f / scale[idx(e)] *
            bf16_to_f32(f32_to_bf16(static_cast<float>(scale[idx(e)] * x.value(t, j))));
    }
  return out;
}

}  // namespace attain::moe
