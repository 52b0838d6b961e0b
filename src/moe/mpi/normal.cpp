// Normal mode (DeepEP's throughput kernels). Dispatch writes each token once to each rank that
// hosts one of its experts, and the receiver expands the rows into the contiguous layout the
// grouped GEMM reads. Combine sums each received token's local expert outputs into one partial
// row, sends it back once per (token, rank), and the source adds the partials.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <stdexcept>

#include "core/util.hpp"
#include "moe/mpi/algorithms.hpp"
#include "moe/reduce_kernels.hpp"

namespace attain::moe::mpi {
namespace {

class Normal final : public Algorithm {
 public:
  using Algorithm::Algorithm;

  void dispatch(const Routing& rt, const Tokens& x, ExpertRows out, DispatchState* st,
                OpTiming& tm) override {
    const auto t0 = Clock::now();
    const std::int64_t s = ++p_.dispatch_seq;
    const int me = p_.me, R = p_.ranks;
    const WindowLayout& w = p_.window;
    const Layout lay = make_layout(rt, p_.cfg.experts, R);
    st->mode = Mode::normal;
    st->routing = &rt;
    st->tokens = rt.tokens;
    st->ranks = R;
    st->sent.assign(idx(R), {});
    st->pos.assign(idx(rt.tokens * R), -1);
    for (std::int64_t t = 0; t < rt.tokens; ++t)
      for (int r = 0; r < R; ++r)
        if (lay.goes_to(t, r)) {
          st->pos[idx(t * R + r)] = static_cast<std::int32_t>(st->sent[idx(r)].size());
          st->sent[idx(r)].push_back(static_cast<std::int32_t>(t));
        }
    // 1. Each token once to each other rank hosting one of its experts, at my rows there.
    for (int k = 1; k < R; ++k) {
      const int dest = (me + k) % R;  // staggered, so not everyone writes to rank 0 first
      p_.wait(Flag::dispatch_free, dest, s - 1, "dispatch: receiver releasing its buffer");
      const auto& list = st->sent[idx(dest)];
      const std::size_t off = w.normal_row(me, 0);
      const std::size_t n = list.size() * idx(w.row_stride);
      std::byte* dst = p_.link->target(dest, off, n);
      for (std::size_t i = 0; i < list.size(); ++i)
        write_row(dst + i * idx(w.row_stride), rt, x, list[i]);
      p_.link->commit(dest, off, n);
      p_.signal(dest, Flag::dispatch_count, static_cast<std::int64_t>(list.size()));
      p_.signal(dest, Flag::dispatch_data, s);
      tm.bytes_out += static_cast<double>(list.size()) *
                      static_cast<double>(w.payload_bytes + w.scale_bytes + w.meta_bytes);
    }
    std::vector<std::int64_t> n_from(idx(R));
    for (int src = 0; src < R; ++src) {
      if (src == me) {
        n_from[idx(src)] = static_cast<std::int64_t>(st->sent[idx(me)].size());
        continue;
      }
      p_.wait(Flag::dispatch_data, src, s, "dispatch: waiting for tokens");
      n_from[idx(src)] = p_.read(Flag::dispatch_count, src);
    }
    p_.link->sync_local();
    tm.transfer_s = since(t0);
    const auto t1 = Clock::now();
    expand(rt, x, out, st, n_from);
    p_.signal_others(Flag::dispatch_free, s);
    tm.local_s = since(t1);
  }

  void combine(const DispatchState& st, const std::uint16_t* y, std::uint16_t* out,
               OpTiming& tm) override {
    const auto t0 = Clock::now();
    const std::int64_t c = ++p_.combine_seq;
    const int me = p_.me, R = p_.ranks;
    const WindowLayout& w = p_.window;
    const std::int64_t H = w.hidden;
    const auto& ops = detail::row_ops();
    std::vector<const std::uint16_t*> rows;
    std::vector<float> wts;
    partial_.resize(idx(w.max_tokens * H));
    double local = 0;
    for (int k = 0; k < R; ++k) {
      const int dest = (me + R - k) % R;  // my own tokens first, then the others staggered
      const auto tr = Clock::now();
      const std::int64_t n = st.recv_tokens[idx(dest)];
      const std::size_t off = w.partial_row(me, 0);
      // My own partials go straight to my region; the others' are staged, then sent.
      auto* dst =
          dest == me ? reinterpret_cast<std::uint16_t*>(p_.link->local() + off) : partial_.data();
      for (std::int64_t i = 0; i < n; ++i) {
        const std::int64_t tok = st.recv_begin[idx(dest)] + i;
        rows.clear();
        wts.clear();
        for (std::int64_t q = st.tok_rows_ptr[idx(tok)]; q < st.tok_rows_ptr[idx(tok + 1)]; ++q) {
          const std::int32_t row = st.tok_rows[idx(q)];
          rows.push_back(y + idx(row * H));
          wts.push_back(st.row_weight[idx(row)]);
        }
        ops.weighted_sum(dst + idx(i * H), rows.data(), wts.data(), static_cast<int>(rows.size()),
                         H);
      }
      local += since(tr);
      if (dest == me) continue;
      p_.wait(Flag::combine_free, dest, c - 1, "combine: receiver releasing its buffer");
      p_.link->put(dest, off, partial_.data(), idx(n * H * 2));
      p_.signal(dest, Flag::combine_data, c);
      tm.bytes_out += static_cast<double>(n * H * 2);
    }
    p_.wait_others(Flag::combine_data, c, "combine: waiting for expert outputs");
    p_.link->sync_local();
    tm.transfer_s = since(t0) - local;
    const auto t1 = Clock::now();
    wts.assign(idx(R), 1.0f);
    for (std::int64_t t = 0; t < st.tokens; ++t) {
      rows.clear();
      for (int r = 0; r < R; ++r) {
        const std::int32_t i = st.pos[idx(t * R + r)];
        if (i < 0) continue;
        rows.push_back(
            reinterpret_cast<const std::uint16_t*>(p_.link->local() + w.partial_row(r, i)));
      }
      ops.weighted_sum(out + idx(t * H), rows.data(), wts.data(), static_cast<int>(rows.size()), H);
    }
    p_.signal_others(Flag::combine_free, c);
    tm.local_s = local + since(t1);
  }

 private:
  // A dispatch row: payload, scales, then meta (token id, top-k ids, top-k weights).
  void write_row(std::byte* dst, const Routing& rt, const Tokens& x, std::int64_t t) const {
    const WindowLayout& w = p_.window;
    const std::int64_t P = w.payload_bytes, S = w.scale_bytes;
    std::memcpy(dst, x.data.data() + idx(t * P), idx(P));
    if (S) std::memcpy(dst + P, x.scales.data() + idx(t * w.scale_blocks), idx(S));
    const auto tt = static_cast<std::int32_t>(t);
    std::byte* m = dst + P + S;
    std::memcpy(m, &tt, 4);
    std::memcpy(m + 4, rt.ids.data() + idx(t * rt.topk), idx(4 * rt.topk));
    std::memcpy(m + 4 + 4 * rt.topk, rt.weights.data() + idx(t * rt.topk), idx(4 * rt.topk));
  }

  // The received tokens (and this rank's own, read in place) into the contiguous layout: rows
  // grouped by local expert, each group padded to `align` rows.
  void expand(const Routing& rt, const Tokens& x, ExpertRows out, DispatchState* st,
              const std::vector<std::int64_t>& n_from) {
    const int me = p_.me, R = p_.ranks, L = p_.local_experts;
    const WindowLayout& w = p_.window;
    const std::int64_t P = w.payload_bytes, S = w.scale_bytes, kb = w.scale_blocks, K = rt.topk;
    struct Src {
      const std::byte* payload;
      const float* scales;
      const std::int32_t* ids;
      const float* weights;
    };
    auto source = [&](int src, std::int64_t i) -> Src {
      if (src == me) {
        const std::int64_t t = st->sent[idx(me)][idx(i)];
        return {reinterpret_cast<const std::byte*>(x.data.data()) + t * P,
                S ? x.scales.data() + t * kb : nullptr, rt.ids.data() + t * K,
                rt.weights.data() + t * K};
      }
      const std::byte* row = p_.link->local() + w.normal_row(src, i);
      return {row, reinterpret_cast<const float*>(row + P),
              reinterpret_cast<const std::int32_t*>(row + P + S + 4),
              reinterpret_cast<const float*>(row + P + S + 4 + 4 * K)};
    };
    const int first = me * L;
    std::vector<std::int64_t> per_expert(idx(L), 0);
    std::int64_t recv_total = 0;
    for (int src = 0; src < R; ++src) {
      recv_total += n_from[idx(src)];
      for (std::int64_t i = 0; i < n_from[idx(src)]; ++i) {
        const Src sr = source(src, i);
        for (std::int64_t k = 0; k < K; ++k)
          if (sr.ids[k] >= first && sr.ids[k] < first + L) ++per_expert[idx(sr.ids[k] - first)];
      }
    }
    out.offsets[0] = 0;
    for (int le = 0; le < L; ++le)
      out.offsets[le + 1] =
          static_cast<std::int32_t>(out.offsets[le] + align_up(per_expert[idx(le)], p_.cfg.align));
    if (out.offsets[L] > out.capacity)
      throw std::runtime_error(
          fmt::format("dispatch: {} expert rows needed on rank {}, capacity {} (size from plan())",
                      out.offsets[L], me, out.capacity));
    st->rows = out;
    st->origin.assign(idx(out.offsets[L]), RowOrigin{});
    st->row_weight.assign(idx(out.offsets[L]), 0.0f);
    st->recv_begin.assign(idx(R + 1), 0);
    st->tok_rows_ptr.assign(idx(recv_total + 1), 0);
    st->tok_rows.clear();
    st->tok_rows.reserve(idx(recv_total * std::min<std::int64_t>(K, L)));
    std::vector<std::int64_t> cursor(out.offsets, out.offsets + L);
    std::int64_t tok = 0;
    for (int src = 0; src < R; ++src) {
      st->recv_begin[idx(src)] = tok;
      for (std::int64_t i = 0; i < n_from[idx(src)]; ++i, ++tok) {
        const Src sr = source(src, i);
        for (std::int64_t k = 0; k < K; ++k) {
          const int e = sr.ids[k];
          if (e < first || e >= first + L) continue;
          const std::int64_t row = cursor[idx(e - first)]++;
          std::memcpy(out.data + row * P, sr.payload, idx(P));
          if (S) std::memcpy(out.scales + row * kb, sr.scales, idx(S));
          st->origin[idx(row)] = {src, static_cast<std::int32_t>(i), static_cast<std::int32_t>(k)};
          st->row_weight[idx(row)] = sr.weights[k];
          st->tok_rows.push_back(static_cast<std::int32_t>(row));
        }
        st->tok_rows_ptr[idx(tok + 1)] = static_cast<std::int64_t>(st->tok_rows.size());
      }
    }
    st->recv_begin[idx(R)] = tok;
    st->recv_tokens = n_from;
  }

  std::vector<std::uint16_t> partial_;  // partial sums for one destination rank
};

}  // namespace

std::unique_ptr<Algorithm> make_normal(Peers& peers) {
  return std::make_unique<Normal>(peers);
}

std::vector<std::int64_t> exchange_counts(Peers& p, const Routing& rt) {
  const int L = p.local_experts;
  const Layout lay = make_layout(rt, p.cfg.experts, p.ranks);
  const std::int64_t s = ++p.plan_seq;
  for (int dest = 0; dest < p.ranks; ++dest) {
    for (int le = 0; le < L; ++le)
      p.link->store(dest, p.window.plan_count(p.me, le), lay.tokens_per_expert[idx(dest * L + le)]);
    p.signal(dest, Flag::plan_seq, s);
  }
  std::vector<std::int64_t> rows(idx(L), 0);
  for (int src = 0; src < p.ranks; ++src) {
    p.wait(Flag::plan_seq, src, s, "dispatch layout exchange");
    for (int le = 0; le < L; ++le) rows[idx(le)] += p.link->load(p.window.plan_count(src, le));
  }
  p.barrier();  // everyone has read its counts before the lines are reused
  return rows;
}

}  // namespace attain::moe::mpi
