// Low-latency mode (DeepEP's decode kernels). Dispatch reserves rows with an atomic add on the
// receiver's per-expert counter and puts one row per (token, expert) there; the receiver gets
// the masked layout with per-expert counts. Combine puts each expert output row into its
// token's top-k slot at the source, which applies the top-k weights.
#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "core/util.hpp"
#include "moe/mpi/algorithms.hpp"
#include "moe/reduce_kernels.hpp"

namespace attain::moe::mpi {
namespace {

class LowLatency final : public Algorithm {
 public:
  using Algorithm::Algorithm;

  void dispatch(const Routing& rt, const Tokens& x, ExpertRows out, DispatchState* st,
                OpTiming& tm) override {
    const WindowLayout& w = p_.window;
    const int me = p_.me, R = p_.ranks, L = p_.local_experts;
    const std::int64_t K = rt.topk, cap = w.ll_capacity(), stride = w.row_stride;
    const std::int64_t P = w.payload_bytes, S = w.scale_bytes, kb = w.scale_blocks;
    const auto t0 = Clock::now();
    const std::int64_t s = ++p_.dispatch_seq;
    if (out.layout != GroupedLayout::masked || out.capacity != cap || out.local_experts != L)
      throw std::runtime_error(
          fmt::format("low-latency dispatch needs masked rows [{}, {}] (got [{}, {}])", L, cap,
                      out.local_experts, out.capacity));
    st->mode = Mode::low_latency;
    st->routing = &rt;
    st->tokens = rt.tokens;
    st->ranks = R;
    // Rows for each (rank, local expert), in token order.
    std::vector<std::vector<std::pair<std::int32_t, std::int32_t>>> bucket(idx(R * L));
    for (std::int64_t t = 0; t < rt.tokens; ++t)
      for (std::int64_t k = 0; k < K; ++k) {
        const int e = rt.id(t, static_cast<int>(k));
        if (e >= 0)
          bucket[idx(e)].push_back({static_cast<std::int32_t>(t), static_cast<std::int32_t>(k)});
      }
    for (int q = 0; q < R; ++q) {
      const int dest = (me + q) % R;
      if (dest != me)
        p_.wait(Flag::dispatch_free, dest, s - 1, "dispatch: receiver releasing its buffer");
      for (int le = 0; le < L; ++le) {
        const auto& b = bucket[idx(dest * L + le)];
        if (b.empty()) continue;
        const auto n = static_cast<std::int64_t>(b.size());
        // Reserve n rows in its buffer.
        const std::int64_t at = p_.link->fetch_add(dest, w.ll_counter(le), n);
        const std::size_t off = w.ll_row(le, at);
        std::byte* dst = p_.link->target(dest, off, idx(n * stride));
        for (std::int64_t j = 0; j < n; ++j) {
          const auto [t, k] = b[idx(j)];
          std::byte* row = dst + j * stride;
          std::memcpy(row, x.data.data() + idx(t * P), idx(P));
          if (S) std::memcpy(row + P, x.scales.data() + idx(t * kb), idx(S));
          const std::int32_t m[3] = {me, t, k};
          std::memcpy(row + P + S, m, sizeof m);
        }
        p_.link->commit(dest, off, idx(n * stride));
        if (dest != me) tm.bytes_out += static_cast<double>(n * (P + S + 12));
      }
      if (dest != me) p_.signal(dest, Flag::dispatch_data, s);
    }
    p_.wait_others(Flag::dispatch_data, s, "dispatch: waiting for tokens");
    p_.link->sync_local();
    tm.transfer_s = since(t0);
    const auto t1 = Clock::now();
    // The masked layout: counts per expert, rows copied out of the window.
    st->rows = out;
    st->origin.assign(idx(L * cap), RowOrigin{});
    for (int le = 0; le < L; ++le) {
      const std::int64_t n = p_.link->load(w.ll_counter(le));
      out.counts[le] = static_cast<std::int32_t>(n);
      for (std::int64_t j = 0; j < n; ++j) {
        const std::byte* row = p_.link->local() + w.ll_row(le, j);
        const std::int64_t dst = le * cap + j;
        std::memcpy(out.data + dst * P, row, idx(P));
        if (S) std::memcpy(out.scales + dst * kb, row + P, idx(S));
        std::int32_t m[3];
        std::memcpy(m, row + P + S, sizeof m);
        st->origin[idx(dst)] = {m[0], m[1], m[2]};
      }
      p_.link->store(me, w.ll_counter(le), 0);
    }
    p_.signal_others(Flag::dispatch_free, s);
    tm.local_s = since(t1);
  }

  void combine(const DispatchState& st, const std::uint16_t* y, std::uint16_t* out,
               OpTiming& tm) override {
    const WindowLayout& w = p_.window;
    const std::int64_t H = w.hidden, K = w.topk, cap = st.rows.capacity;
    const int me = p_.me, L = p_.local_experts;
    const auto t0 = Clock::now();
    const std::int64_t c = ++p_.combine_seq;
    for (int r = 0; r < p_.ranks; ++r)
      if (r != me) p_.wait(Flag::combine_free, r, c - 1, "combine: receiver releasing its buffer");
    // Each expert output row straight into its token's top-k slot at the source rank.
    for (int le = 0; le < L; ++le)
      for (std::int64_t j = 0; j < st.rows.counts[le]; ++j) {
        const RowOrigin& o = st.origin[idx(le * cap + j)];
        p_.link->put(o.rank, w.expert_output(o.token, o.slot), y + idx((le * cap + j) * H),
                     idx(H * 2));
        if (o.rank != me) tm.bytes_out += static_cast<double>(H * 2);
      }
    p_.signal_others(Flag::combine_data, c);
    p_.wait_others(Flag::combine_data, c, "combine: waiting for expert outputs");
    p_.link->sync_local();
    tm.transfer_s = since(t0);
    const auto t1 = Clock::now();
    const Routing& rt = *st.routing;
    const auto& ops = detail::row_ops();
    std::vector<const std::uint16_t*> rows;
    std::vector<float> wts;
    for (std::int64_t t = 0; t < st.tokens; ++t) {
      rows.clear();
      wts.clear();
      for (std::int64_t k = 0; k < K; ++k) {
        if (rt.id(t, static_cast<int>(k)) < 0) continue;
        rows.push_back(
            reinterpret_cast<const std::uint16_t*>(p_.link->local() + w.expert_output(t, k)));
        wts.push_back(rt.weight(t, static_cast<int>(k)));
      }
      ops.weighted_sum(out + idx(t * H), rows.data(), wts.data(), static_cast<int>(rows.size()), H);
    }
    p_.signal_others(Flag::combine_free, c);
    tm.local_s = since(t1);
  }
};

}  // namespace

std::unique_ptr<Algorithm> make_low_latency(Peers& peers) {
  return std::make_unique<LowLatency>(peers);
}

}  // namespace attain::moe::mpi
