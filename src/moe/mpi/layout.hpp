// The window every rank allocates once (sized by CommConfig), and where each thing lives in it.
//
//   control    one 64-byte line per flag: [flag][peer rank], then the low-latency row counters
//              [local expert], then the layout exchange's counts [source rank][local expert]
//   dispatch   normal: [ranks][max_tokens] rows of payload + scales + meta
//              low-latency: [local experts][ranks * max_tokens] rows
//   combine    normal: [ranks][max_tokens][hidden] bf16 partial sums
//              low-latency: [max_tokens][top-k][hidden] bf16 expert outputs
#pragma once

#include <cstddef>
#include <cstdint>

#include "attain/moe.hpp"
#include "core/util.hpp"

namespace attain::moe::mpi {

// The flags in a rank's control region, one line per (flag, peer). A peer writes its own line of
// the receiver's region; the receiver polls it.
enum class Flag : int {
  dispatch_data,   // sender: the rows of dispatch sequence s are in your region
  dispatch_free,   // receiver: my region may take dispatch s + 1
  combine_data,    // sender: the outputs of combine sequence s are in your region
  combine_free,    // receiver: my region may take combine s + 1
  dispatch_count,  // normal dispatch: how many rows the sender wrote (a count, not a sequence)
  barrier,         // barrier sequence
  plan_seq,        // layout exchange: the sender's counts of plan sequence s are written
  count
};

struct WindowLayout {
  static constexpr std::size_t kLine = 64;  // one flag or counter per cache line

  int ranks = 1, local_experts = 1;
  std::int64_t max_tokens = 0, hidden = 0, topk = 0;
  std::int64_t payload_bytes = 0;  // one token's payload: bf16 or e4m3
  std::int64_t scale_blocks = 0;   // fp8: one fp32 scale per 1x128 block
  std::int64_t scale_bytes = 0;
  std::int64_t meta_bytes = 0;  // normal: token id, top-k ids and weights; low-latency: rank,
                                // token, slot
  std::int64_t row_stride = 0;  // one dispatch row, 64-byte aligned
  std::size_t control_bytes = 0, dispatch_offset = 0, combine_offset = 0, total_bytes = 0;

  WindowLayout() = default;
  WindowLayout(const CommConfig& cfg, int ranks);

  std::size_t flag(Flag f, int peer) const {
    return (static_cast<std::size_t>(f) * idx(ranks) + idx(peer)) * kLine;
  }
  std::size_t ll_counter(int local_expert) const {
    return (idx(flag_lines()) + idx(local_expert)) * kLine;
  }
  std::size_t plan_count(int src, int local_expert) const {
    return (idx(flag_lines()) + idx(local_experts) + idx(src) * idx(local_experts) +
            idx(local_expert)) *
           kLine;
  }
  std::int64_t ll_capacity() const { return ranks * max_tokens; }
  // Normal dispatch: row i of those rank `src` sent.
  std::size_t normal_row(int src, std::int64_t i) const {
    return dispatch_offset + idx((src * max_tokens + i) * row_stride);
  }
  // Low-latency dispatch: row j of local expert `le`.
  std::size_t ll_row(int le, std::int64_t j) const {
    return dispatch_offset + idx((le * ll_capacity() + j) * row_stride);
  }
  // Normal combine: partial sum i of those rank `src` sent back.
  std::size_t partial_row(int src, std::int64_t i) const {
    return combine_offset + idx((src * max_tokens + i) * hidden * 2);
  }
  // Low-latency combine: the expert output for (token, top-k slot).
  std::size_t expert_output(std::int64_t token, std::int64_t slot) const {
    return combine_offset + idx((token * topk + slot) * hidden * 2);
  }

 private:
  std::int64_t flag_lines() const { return static_cast<std::int64_t>(Flag::count) * ranks; }
};

}  // namespace attain::moe::mpi
