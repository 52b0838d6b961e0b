#include "moe/mpi/layout.hpp"

namespace attain::moe::mpi {

WindowLayout::WindowLayout(const CommConfig& cfg, int r)
    : ranks(r),
      local_experts(cfg.experts / r),
      max_tokens(cfg.max_tokens),
      hidden(cfg.hidden),
      topk(cfg.topk) {
  const bool fp8 = cfg.dtype == Payload::fp8;
  payload_bytes = hidden * (fp8 ? 1 : 2);
  scale_blocks = fp8 ? ceil_div(hidden, kFp8Block) : 0;
  scale_bytes = 4 * scale_blocks;
  meta_bytes = cfg.mode == Mode::normal ? 4 + 8 * topk : 12;
  row_stride = round_up(payload_bytes + scale_bytes + meta_bytes, 64);
  const std::int64_t lines = flag_lines() + local_experts + ranks * local_experts;
  control_bytes = idx(round_up(lines * static_cast<std::int64_t>(kLine), 4096));
  dispatch_offset = control_bytes;
  const std::int64_t dispatch_rows =
      cfg.mode == Mode::normal ? ranks * max_tokens : local_experts * ll_capacity();
  combine_offset = dispatch_offset + idx(round_up(dispatch_rows * row_stride, 4096));
  const std::int64_t combine_rows =
      cfg.mode == Mode::normal ? ranks * max_tokens : max_tokens * topk;
  total_bytes = combine_offset + idx(combine_rows * hidden * 2);
}

}  // namespace attain::moe::mpi
