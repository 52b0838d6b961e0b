#include "attain/verify.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include "attain/threadpool.hpp"
#include "bench/rng.hpp"
#include "core/util.hpp"
#include "device/probe.hpp"

namespace attain {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
void store(const Tensor& t, std::int64_t i, float v) {
  switch (t.desc.dtype) {
    case DType::f32:
      t.as<float>()[i] = v;
      break;
    case DType::bf16:
      t.as<std::uint16_t>()[i] = f32_to_bf16(v);
      break;
    case DType::f16:
      t.as<std::uint16_t>()[i] = f32_to_f16(v);
      break;
    case DType::fp8:
      t.as<std::uint8_t>()[i] = f32_to_e4m3(v);
      break;
    default:
      break;
  }
}

// A matrix stored as rows of length k with optional fp8 block scales:
// rows are flattened over the leading dims; `rows_per_matrix` rows share a scale grid.
struct RowSource {
  const Tensor* data = nullptr;
  const Tensor* scale = nullptr;
  std::int64_t k = 0;
  std::int64_t rows_per_matrix = 1;  // n for weights, 1 for activations
  std::int64_t scale_rows = 1;       // 128 for weights (128x128 blocks), 1 for activations

  void load(std::int64_t r, double* out) const {
    const auto* base = data->data + static_cast<std::size_t>(r * k) * dtype_size(data->desc.dtype);
    switch (data->desc.dtype) {
      case DType::f32: {
        const auto* p = reinterpret_cast<const float*>(base);
        for (std::int64_t j = 0; j < k; ++j) out[j] = p[j];
        break;
      }
      case DType::bf16: {
        const auto* p = reinterpret_cast<const std::uint16_t*>(base);
        for (std::int64_t j = 0; j < k; ++j) out[j] = bf16_to_f32(p[j]);
        break;
      }
      case DType::f16: {
        const auto* p = reinterpret_cast<const std::uint16_t*>(base);
        for (std::int64_t j = 0; j < k; ++j) out[j] = f16_to_f32(p[j]);
        break;
      }
      case DType::fp8: {
        const auto* p = reinterpret_cast<const std::uint8_t*>(base);
        const float* tab = e4m3_table();
        const std::int64_t kb = ceil_div(k, kFp8Block);
        const std::int64_t mat = r / rows_per_matrix, row = r % rows_per_matrix;
        const std::int64_t srow = mat * ceil_div(rows_per_matrix, scale_rows) + row / scale_rows;
        const float* sc = scale->as<float>() + srow * kb;
        for (std::int64_t j = 0; j < k; ++j)
          out[j] = static_cast<double>(tab[p[j]]) * sc[j / kFp8Block];
        break;
      }
      default:
        break;
    }
  }
};

// Every output row of a gemm-like op: C[crow, 0..n) = A[arow] . W[wbase + j]^T.
struct RowTask {
  std::int64_t arow, wbase, crow;
};

struct GemmView {
  RowSource a, w;
  const Tensor* c = nullptr;
  std::int64_t n = 0, k = 0;
  std::vector<RowTask> tasks;
};

GemmView gemm_view(const TensorSet& set) {
  const Op& op = set.op();
  GemmView v;
  v.n = op.n, v.k = op.k, v.c = &set["c"];
  const bool fp8 = op.dtype == DType::fp8;
  v.a = {&set["a"], fp8 ? &set["a_scale"] : nullptr, op.k, 1, 1};
  v.w = {&set["w"], fp8 ? &set["w_scale"] : nullptr, op.k, op.n, kFp8Block};
  switch (op.kind) {
    case OpKind::gemm:
      for (std::int64_t i = 0; i < op.m; ++i) v.tasks.push_back({i, 0, i});
      break;
    case OpKind::batched_gemm:
      for (std::int64_t bt = 0; bt < op.batch; ++bt)
        for (std::int64_t i = 0; i < op.m; ++i)
          v.tasks.push_back({bt * op.m + i, bt * op.n, bt * op.m + i});
      break;
    case OpKind::grouped_gemm:
      if (op.layout == GroupedLayout::contiguous) {
        const auto* off = set["offsets"].as<std::int32_t>();
        for (std::int64_t g = 0; g < op.groups; ++g)
          for (std::int64_t r = off[g]; r < off[g + 1]; ++r) v.tasks.push_back({r, g * op.n, r});
      } else {
        const auto* cnt = set["counts"].as<std::int32_t>();
        const std::int64_t mm = op.max_group_rows();
        for (std::int64_t g = 0; g < op.groups; ++g)
          for (std::int64_t r = 0; r < cnt[g]; ++r)
            v.tasks.push_back({g * mm + r, g * op.n, g * mm + r});
      }
      break;
    case OpKind::mla_decode:
      break;
  }
  return v;
}

// Runs body(u0, u1) over the units [0, n) in ranges of at least `grain` units, on every CPU
// the process may use: a layer's operands are gigabytes (DeepSeek-V3's fp8 experts at 32 tokens:
// 11.6 GB), filled one value at a time. Each range skips its generator to its first draw, so
// the data are the same as from one pass, whatever the thread count.
template <class Body>
void parallel_units(std::int64_t n, std::int64_t grain, Body&& body) {
  const std::int64_t g = std::max<std::int64_t>(grain, 1);  // any grain, up to INT64_MAX
  const std::int64_t chunks = std::min<std::int64_t>(n / g + (n % g != 0), 4096);
  if (chunks <= 1) return body(std::int64_t{0}, n);
  ThreadPool::instance().run_tasks(probe::available_cpus(), chunks, [&](std::int64_t c) {
    body(n * c / chunks, n * (c + 1) / chunks);
  });
}

constexpr std::int64_t kFillGrain = 1 << 20;  // values per range: a thread's start is worth it

void fill_uniform(const Tensor& t, Rng& rng, std::int64_t grain) {
  const std::int64_t n = t.numel();
  parallel_units(n, grain, [&](std::int64_t i0, std::int64_t i1) {
    Rng r = rng;
    r.skip(static_cast<std::uint64_t>(i0));
    for (std::int64_t i = i0; i < i1; ++i) store(t, i, r.uniform());
  });
  rng.skip(static_cast<std::uint64_t>(n));
}

// fp8 data with block scales: each (scale_rows x 128) block gets its own magnitude,
// so scales differ across blocks; values use the whole e4m3 range.
void fill_fp8(const Tensor& t, const Tensor& scale, std::int64_t rows_per_matrix,
              std::int64_t scale_rows, Rng& rng, std::int64_t grain) {
  const std::int64_t k = t.desc.shape.back();
  const std::int64_t rows = t.numel() / k, kb = ceil_div(k, kFp8Block);
  const std::int64_t sr_per_mat = ceil_div(rows_per_matrix, scale_rows);
  const std::int64_t mats = rows / rows_per_matrix;
  // Draws per matrix (a magnitude per block, a value per element) and per full block row.
  const std::int64_t per_mat = sr_per_mat * kb + rows_per_matrix * k;
  const std::int64_t per_block_row = kb + scale_rows * k;
  auto* q = t.as<std::uint8_t>();
  auto* sc = scale.as<float>();
  // The units are block rows (scale_rows rows of A or W sharing a row of scales).
  parallel_units(
      mats * sr_per_mat, std::max<std::int64_t>(1, grain / per_block_row),
      [&](std::int64_t u0, std::int64_t u1) {
        std::vector<float> block(static_cast<std::size_t>(scale_rows * kFp8Block));
        Rng r = rng;
        const std::int64_t mat0 = u0 / sr_per_mat, br0 = u0 % sr_per_mat;
        r.skip(static_cast<std::uint64_t>(mat0 * per_mat + br0 * per_block_row));
        for (std::int64_t u = u0; u < u1; ++u) {
          const std::int64_t mat = u / sr_per_mat, br = u % sr_per_mat;
          const std::int64_t rbeg = mat * rows_per_matrix + br * scale_rows;
          const std::int64_t rend = std::min(rbeg + scale_rows, (mat + 1) * rows_per_matrix);
          for (std::int64_t bk = 0; bk < kb; ++bk) {
            const std::int64_t kbeg = bk * kFp8Block, kend = std::min(kbeg + kFp8Block, k);
            const float mag = 0.25f + 1.75f * (r.uniform() * 0.5f + 0.5f);
            float amax = 0;
            std::size_t idx = 0;
            for (std::int64_t row = rbeg; row < rend; ++row)
              for (std::int64_t j = kbeg; j < kend; ++j) {
                block[idx] = mag * r.uniform();
                amax = std::max(amax, std::fabs(block[idx++]));
              }
            const float s = amax > 0 ? amax / kFp8Max : 1.0f;
            sc[(mat * sr_per_mat + br) * kb + bk] = s;
            idx = 0;
            for (std::int64_t row = rbeg; row < rend; ++row)
              for (std::int64_t j = kbeg; j < kend; ++j)
                q[row * k + j] = f32_to_e4m3(block[idx++] / s);
          }
        }
      });
  rng.skip(static_cast<std::uint64_t>(mats * per_mat));
}

void fill_mla(TensorSet& set, Rng& rng, std::int64_t grain) {
  const Op& op = set.op();
  fill_uniform(set["q"], rng, grain);
  const std::int64_t max_blocks = ceil_div(op.s, kMlaBlock), nblocks = op.b * max_blocks;
  std::vector<std::int32_t> perm(static_cast<std::size_t>(nblocks));
  std::iota(perm.begin(), perm.end(), 0);
  for (std::int64_t i = nblocks - 1; i > 0; --i)
    std::swap(perm[static_cast<std::size_t>(i)],
              perm[rng.below(static_cast<std::uint64_t>(i + 1))]);
  auto* bt = set["block_table"].as<std::int32_t>();
  std::copy(perm.begin(), perm.end(), bt);
  auto* sl = set["seqlens"].as<std::int32_t>();
  for (std::int64_t i = 0; i < op.b; ++i) sl[i] = static_cast<std::int32_t>(op.s);
  fill_mla_cache(set, rng.next());
}

}  // namespace

double load_value(const Tensor& t, std::int64_t i) {
  switch (t.desc.dtype) {
    case DType::f32:
      return t.as<float>()[i];
    case DType::bf16:
      return bf16_to_f32(t.as<std::uint16_t>()[i]);
    case DType::f16:
      return f16_to_f32(t.as<std::uint16_t>()[i]);
    case DType::fp8:
      return e4m3_to_f32(t.as<std::uint8_t>()[i]);
    case DType::i32:
      return t.as<std::int32_t>()[i];
    case DType::u8:
      return t.as<std::uint8_t>()[i];
  }
  return kNaN;
}

void load_mla_row(const Tensor& kcache, std::int64_t block, std::int64_t slot, double* out) {
  const std::int64_t row = block * kMlaBlock + slot;
  if (kcache.desc.dtype == DType::u8) {
    const std::uint8_t* p = kcache.as<std::uint8_t>() + row * kMlaFp8RowBytes;
    float scales[4];
    std::memcpy(scales, p + kMlaDv, sizeof scales);
    for (int j = 0; j < kMlaDv; ++j)
      out[j] = static_cast<double>(e4m3_to_f32(p[j])) * scales[j / kFp8Block];
    const std::uint8_t* rope = p + kMlaDv + sizeof scales;
    for (int j = 0; j < kMlaDk - kMlaDv; ++j) {
      std::uint16_t h;
      std::memcpy(&h, rope + 2 * j, 2);
      out[kMlaDv + j] = bf16_to_f32(h);
    }
    return;
  }
  for (int j = 0; j < kMlaDk; ++j) out[j] = load_value(kcache, row * kMlaDk + j);
}

void fill_mla_cache(TensorSet& set, std::uint64_t seed) {
  Rng rng(seed);
  const Op& op = set.op();
  const Tensor& kc = set["kcache"];
  const auto* bt = set["block_table"].as<std::int32_t>();
  const auto* sl = set["seqlens"].as<std::int32_t>();
  const std::int64_t max_blocks = set["block_table"].desc.shape[1];
  const std::int64_t nblocks = kc.desc.shape[0];
  std::vector<char> live(static_cast<std::size_t>(nblocks * kMlaBlock), 0);
  for (std::int64_t i = 0; i < op.b; ++i)
    for (std::int64_t t = 0; t < sl[i]; ++t) {
      const std::int64_t blk = bt[i * max_blocks + t / kMlaBlock];
      live[static_cast<std::size_t>(blk * kMlaBlock + t % kMlaBlock)] = 1;
    }
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (std::int64_t r = 0; r < nblocks * kMlaBlock; ++r) {
    const bool on = live[static_cast<std::size_t>(r)] != 0;
    if (kc.desc.dtype == DType::u8) {
      std::uint8_t* p = kc.as<std::uint8_t>() + r * kMlaFp8RowBytes;
      float scales[4];
      for (int g = 0; g < 4; ++g) {
        float vals[kFp8Block];
        float amax = 0;
        const float mag = 0.25f + 1.75f * (rng.uniform() * 0.5f + 0.5f);
        for (auto& v : vals) amax = std::max(amax, std::fabs(v = mag * rng.uniform()));
        scales[g] = on ? (amax > 0 ? amax / kFp8Max : 1.0f) : nan;
        for (int j = 0; j < kFp8Block; ++j)
          p[g * kFp8Block + j] = on ? f32_to_e4m3(vals[j] / scales[g]) : std::uint8_t{0x7f};
      }
      std::memcpy(p + kMlaDv, scales, sizeof scales);
      for (int j = 0; j < kMlaDk - kMlaDv; ++j) {
        const std::uint16_t h = f32_to_bf16(on ? rng.uniform() : nan);
        std::memcpy(p + kMlaDv + sizeof scales + 2 * j, &h, 2);
      }
    } else {
      for (int j = 0; j < kMlaDk; ++j) store(kc, r * kMlaDk + j, on ? rng.uniform() : nan);
    }
  }
}

void fill_inputs(TensorSet& set, std::uint64_t seed, std::int64_t grain) {
  if (grain <= 0) grain = kFillGrain;
  Rng rng(seed);
  const Op& op = set.op();
  if (op.kind == OpKind::mla_decode) return fill_mla(set, rng, grain);
  const bool fp8 = op.dtype == DType::fp8;
  if (fp8) {
    fill_fp8(set["a"], set["a_scale"], 1, 1, rng, grain);
    fill_fp8(set["w"], set["w_scale"], op.n, kFp8Block, rng, grain);
  } else {
    fill_uniform(set["a"], rng, grain);
    fill_uniform(set["w"], rng, grain);
  }
  if (op.kind == OpKind::grouped_gemm) {
    const auto rows = op.group_rows();
    if (op.layout == GroupedLayout::contiguous) {
      auto* off = set["offsets"].as<std::int32_t>();
      off[0] = 0;
      for (std::size_t g = 0; g < rows.size(); ++g)
        off[g + 1] = off[g] + static_cast<std::int32_t>(rows[g]);
    } else {
      auto* cnt = set["counts"].as<std::int32_t>();
      for (std::size_t g = 0; g < rows.size(); ++g) cnt[g] = static_cast<std::int32_t>(rows[g]);
      // Padding rows past each group's count hold NaN: reading them must not leak.
      const Tensor& a = set["a"];
      const std::int64_t mm = op.max_group_rows();
      for (std::int64_t g = 0; g < op.groups; ++g)
        for (std::int64_t r = rows[static_cast<std::size_t>(g)]; r < mm; ++r)
          for (std::int64_t j = 0; j < op.k; ++j) store(a, (g * mm + r) * op.k + j, std::nanf(""));
    }
  }
}

void poison_outputs(TensorSet& set) {
  for (auto& t : set.all()) {
    if (!t.desc.output) continue;
    switch (t.desc.dtype) {
      case DType::f32:
        std::fill_n(t.as<float>(), t.numel(), std::nanf(""));
        break;
      case DType::bf16:
      case DType::f16:
        std::fill_n(t.as<std::uint16_t>(), t.numel(), std::uint16_t{0x7fff});
        break;
      default:
        std::memset(t.data, 0xff, t.nbytes());
        break;
    }
  }
}

double tolerance(const Op& op) {
  // Normwise relative error of fp32 accumulation grows ~ sqrt(K) * eps; outputs stored in
  // 16 bits add their rounding (bf16: 2^-9 relative, fp16: 2^-12).
  const double red =
      op.kind == OpKind::mla_decode ? static_cast<double>(op.s) : static_cast<double>(op.k);
  const double acc = 4e-7 * std::sqrt(std::max(1.0, red));
  switch (op.out_dtype()) {
    case DType::bf16:
      return 8e-3 + acc;
    case DType::f16:
      return 2e-3 + acc;
    default:
      return std::max(1e-5, acc);
  }
}

namespace {

bool finite_all(const Tensor& t, std::int64_t row, std::int64_t n, std::string* where) {
  for (std::int64_t j = 0; j < n; ++j) {
    const double v = load_value(t, row * n + j);
    if (!std::isfinite(v)) {
      *where = fmt::format("{}[{}, {}] = {}", t.desc.name, row, j, v);
      return false;
    }
  }
  return true;
}

Verification verify_gemm(const TensorSet& set, double full_limit, std::uint64_t seed) {
  const Op& op = set.op();
  GemmView v = gemm_view(set);
  Verification res;
  res.tolerance = tolerance(op);
  const auto n = v.n, k = v.k;
  for (const auto& t : v.tasks)
    if (!finite_all(*v.c, t.crow, n, &res.detail)) {
      res.detail = "non-finite output " + res.detail;
      return res;
    }
  double err2 = 0, ref2 = 0;
  std::vector<double> arow(static_cast<std::size_t>(k));
  if (op.flops() <= full_limit) {
    // Full fp64 reference, one W matrix (group / batch item) loaded at a time.
    std::vector<double> w(static_cast<std::size_t>(n * k));
    std::int64_t loaded = -1;
    for (const auto& t : v.tasks) {
      if (t.wbase != loaded) {
        for (std::int64_t j = 0; j < n; ++j)
          v.w.load(t.wbase + j, &w[static_cast<std::size_t>(j * k)]);
        loaded = t.wbase;
      }
      v.a.load(t.arow, arow.data());
      for (std::int64_t j = 0; j < n; ++j) {
        double acc = 0;
        const double* wr = &w[static_cast<std::size_t>(j * k)];
        for (std::int64_t q = 0; q < k; ++q) acc += arow[static_cast<std::size_t>(q)] * wr[q];
        const double got = load_value(*v.c, t.crow * n + j);
        err2 += (got - acc) * (got - acc);
        ref2 += acc * acc;
      }
    }
  } else {
    // Residual: y1 = C.t must equal y2 = A.(W^T.t) for a random t.
    Rng rng(seed);
    std::vector<double> tv(static_cast<std::size_t>(n)), u(static_cast<std::size_t>(k)),
        wrow(static_cast<std::size_t>(k));
    for (auto& x : tv) x = rng.uniform();
    std::int64_t loaded = -1;
    for (const auto& t : v.tasks) {
      if (t.wbase != loaded) {
        std::fill(u.begin(), u.end(), 0.0);
        for (std::int64_t j = 0; j < n; ++j) {
          v.w.load(t.wbase + j, wrow.data());
          const double tj = tv[static_cast<std::size_t>(j)];
          for (std::int64_t q = 0; q < k; ++q)
            u[static_cast<std::size_t>(q)] += tj * wrow[static_cast<std::size_t>(q)];
        }
        loaded = t.wbase;
      }
      v.a.load(t.arow, arow.data());
      double y2 = 0, y1 = 0;
      for (std::int64_t q = 0; q < k; ++q)
        y2 += arow[static_cast<std::size_t>(q)] * u[static_cast<std::size_t>(q)];
      for (std::int64_t j = 0; j < n; ++j)
        y1 += load_value(*v.c, t.crow * n + j) * tv[static_cast<std::size_t>(j)];
      err2 += (y1 - y2) * (y1 - y2);
      ref2 += y2 * y2;
    }
  }
  res.error = ref2 > 0 ? std::sqrt(err2 / ref2) : std::sqrt(err2);
  res.ok = res.error <= res.tolerance;
  if (!res.ok)
    res.detail =
        fmt::format("relative error {:.3g} above tolerance {:.3g}", res.error, res.tolerance);
  return res;
}

// One (request, query, head) row of the MLA reference: o[512] and lse.
void mla_reference_row(const TensorSet& set, std::int64_t bi, std::int64_t qi, std::int64_t hi,
                       double* o, double* lse) {
  const Op& op = set.op();
  const Tensor& q = set["q"];
  const Tensor& kc = set["kcache"];
  const auto* bt = set["block_table"].as<std::int32_t>();
  const std::int64_t max_blocks = set["block_table"].desc.shape[1];
  const std::int64_t seqlen = set["seqlens"].as<std::int32_t>()[bi];
  const std::int64_t keys = std::max<std::int64_t>(0, seqlen - op.s_q + qi + 1);
  std::vector<double> qv(kMlaDk), row(kMlaDk), scores(static_cast<std::size_t>(keys));
  const std::int64_t qoff = ((bi * op.s_q + qi) * op.h + hi) * kMlaDk;
  for (int j = 0; j < kMlaDk; ++j) qv[static_cast<std::size_t>(j)] = load_value(q, qoff + j);
  std::fill(o, o + kMlaDv, 0.0);
  if (keys == 0) {
    *lse = -std::numeric_limits<double>::infinity();
    return;
  }
  double mx = -std::numeric_limits<double>::infinity();
  for (std::int64_t t = 0; t < keys; ++t) {
    load_mla_row(kc, bt[bi * max_blocks + t / kMlaBlock], t % kMlaBlock, row.data());
    double sdot = 0;
    for (int j = 0; j < kMlaDk; ++j)
      sdot += qv[static_cast<std::size_t>(j)] * row[static_cast<std::size_t>(j)];
    scores[static_cast<std::size_t>(t)] = sdot * kMlaSoftmaxScale;
    mx = std::max(mx, scores[static_cast<std::size_t>(t)]);
  }
  double sum = 0;
  for (std::int64_t t = 0; t < keys; ++t) {
    const double p = std::exp(scores[static_cast<std::size_t>(t)] - mx);
    sum += p;
    load_mla_row(kc, bt[bi * max_blocks + t / kMlaBlock], t % kMlaBlock, row.data());
    for (int j = 0; j < kMlaDv; ++j) o[j] += p * row[static_cast<std::size_t>(j)];
  }
  for (int j = 0; j < kMlaDv; ++j) o[j] /= sum;
  *lse = mx + std::log(sum);
}

Verification verify_mla(const TensorSet& set, double full_limit, std::uint64_t seed) {
  const Op& op = set.op();
  Verification res;
  res.tolerance = tolerance(op);
  const Tensor& o = set["o"];
  const Tensor& lse = set["lse"];
  // All rows when small; otherwise a seeded sample of 96 (request, query, head) rows.
  std::vector<std::array<std::int64_t, 3>> rows;
  const std::int64_t total = op.b * op.s_q * op.h;
  if (op.flops() <= full_limit) {
    for (std::int64_t bi = 0; bi < op.b; ++bi)
      for (std::int64_t qi = 0; qi < op.s_q; ++qi)
        for (std::int64_t hi = 0; hi < op.h; ++hi) rows.push_back({bi, qi, hi});
  } else {
    Rng rng(seed);
    for (int i = 0; i < 96; ++i) {
      const auto r = static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(total)));
      rows.push_back({r / (op.s_q * op.h), (r / op.h) % op.s_q, r % op.h});
    }
  }
  std::vector<double> ref(kMlaDv);
  double err2 = 0, ref2 = 0, lse_err = 0;
  for (const auto& [bi, qi, hi] : rows) {
    double ref_lse = 0;
    mla_reference_row(set, bi, qi, hi, ref.data(), &ref_lse);
    const std::int64_t ooff = ((bi * op.s_q + qi) * op.h + hi) * kMlaDv;
    for (int j = 0; j < kMlaDv; ++j) {
      const double got = load_value(o, ooff + j);
      if (!std::isfinite(got)) {
        res.detail = fmt::format("non-finite output o[{}, {}, {}, {}] = {}", bi, qi, hi, j, got);
        return res;
      }
      err2 += (got - ref[static_cast<std::size_t>(j)]) * (got - ref[static_cast<std::size_t>(j)]);
      ref2 += ref[static_cast<std::size_t>(j)] * ref[static_cast<std::size_t>(j)];
    }
    const double got_lse = load_value(lse, (bi * op.h + hi) * op.s_q + qi);
    if (std::isinf(ref_lse)) {
      if (!(std::isinf(got_lse) && got_lse < 0)) {
        res.detail = fmt::format("lse[{}, {}, {}] = {} for an empty sequence (expected -inf)", bi,
                                 hi, qi, got_lse);
        return res;
      }
    } else if (!std::isfinite(got_lse)) {
      res.detail = fmt::format("non-finite lse[{}, {}, {}] = {}", bi, hi, qi, got_lse);
      return res;
    } else {
      lse_err = std::max(lse_err, std::fabs(got_lse - ref_lse) / std::max(1.0, std::fabs(ref_lse)));
    }
  }
  res.error = std::max(ref2 > 0 ? std::sqrt(err2 / ref2) : std::sqrt(err2), lse_err);
  res.ok = res.error <= res.tolerance;
  if (!res.ok)
    res.detail =
        fmt::format("relative error {:.3g} above tolerance {:.3g}", res.error, res.tolerance);
  return res;
}

}  // namespace

Verification verify(const TensorSet& set, double full_limit, std::uint64_t seed) {
  Verification res = set.op().kind == OpKind::mla_decode ? verify_mla(set, full_limit, seed)
                                                         : verify_gemm(set, full_limit, seed);
  if (res.ok && !set.guards_intact()) {
    res.ok = false;
    res.detail = "a write past the end of a tensor overwrote its guard region";
  }
  return res;
}

std::vector<std::vector<double>> reference_outputs(const TensorSet& set) {
  const Op& op = set.op();
  std::vector<std::vector<double>> out;
  if (op.kind == OpKind::mla_decode) {
    std::vector<double> o(static_cast<std::size_t>(set["o"].numel()), 0.0);
    std::vector<double> lse(static_cast<std::size_t>(set["lse"].numel()), 0.0);
    for (std::int64_t bi = 0; bi < op.b; ++bi)
      for (std::int64_t qi = 0; qi < op.s_q; ++qi)
        for (std::int64_t hi = 0; hi < op.h; ++hi)
          mla_reference_row(set, bi, qi, hi,
                            &o[static_cast<std::size_t>(((bi * op.s_q + qi) * op.h + hi) * kMlaDv)],
                            &lse[static_cast<std::size_t>((bi * op.h + hi) * op.s_q + qi)]);
    out.push_back(std::move(o));
    out.push_back(std::move(lse));
    return out;
  }
  GemmView v = gemm_view(set);
  const auto n = v.n, k = v.k;
  std::vector<double> c(static_cast<std::size_t>(v.c->numel()), kNaN);  // padding rows stay NaN
  std::vector<double> arow(static_cast<std::size_t>(k)), wrow(static_cast<std::size_t>(k));
  for (const auto& t : v.tasks) {
    v.a.load(t.arow, arow.data());
    for (std::int64_t j = 0; j < n; ++j) {
      v.w.load(t.wbase + j, wrow.data());
      double acc = 0;
      for (std::int64_t q = 0; q < k; ++q)
        acc += arow[static_cast<std::size_t>(q)] * wrow[static_cast<std::size_t>(q)];
      c[static_cast<std::size_t>(t.crow * n + j)] = acc;
    }
  }
  out.push_back(std::move(c));
  return out;
}

}  // namespace attain
