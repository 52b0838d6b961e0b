// The engine's plan of a call, for its tuner: the same make_problem, bind and path plan() the
// executor runs, stopped before any work.
#include <algorithm>
#include <stdexcept>

#include "attain/gemm_plan.hpp"
#include "kernels/cpu/gemm/paths/path.hpp"

namespace attain::gemm {

Plan plan(const Params& p, const Schedule& s) {
  Params given = p;
  given.schedule = s;
  Plan out;
  out.s = resolve(given);
  if (!schedule_fits(p, out.s)) throw std::invalid_argument("gemm: the schedule does not fit");
  const bool swap = out.s.swap && detail::reads_operands(p);  // as the executor's problem_of
  out.p = swap ? detail::swapped(p) : p;
  Schedule t = out.s;
  if (!swap) t.swap = false;
  detail::Problem pr = detail::make_problem(out.p, t);
  pr.ct = swap;
  const detail::KernelFamily& f = *pr.fam;
  out.route.swap = swap;
  out.mr = f.mr, out.nr = f.nr;
  out.direct_rows = f.direct_rows, out.direct_panel = f.direct_panel;
  out.direct_lanes = f.direct_lanes;
  out.slices = pr.slices;
  const bool fp8 = out.p.a_type == DType::fp8 && out.p.b_type == DType::fp8;
  switch (out.s.path) {
    case Path::decode:
      out.route.bf16_pairs = pr.pairs_decode != nullptr;
      out.route.converts_a = detail::path_impl(Path::decode).scratch_floats(pr) > 0;
      break;
    case Path::direct:
      out.route.bf16_pairs = pr.pairs;
      out.route.converts_w = detail::direct_converts(out.p, f);
      out.route.k_pairs = pr.k2;
      out.at_in_block = pr.at_in_block;
      break;
    default:
      out.route.bf16_pairs = pr.pairs;
      break;
  }
  out.route.fp8_pairs = out.route.bf16_pairs && fp8;
  if (out.p.m == 0 || out.p.n == 0 || !detail::reads_operands(out.p)) return out;
  std::vector<detail::Block> blocks;
  detail::path_impl(out.s.path).plan(pr, blocks);
  out.blocks.reserve(blocks.size());
  for (const detail::Block& b : blocks) {
    const std::int64_t k0 = b.slice < 0 ? 0 : b.slice * pr.kslice;
    const std::int64_t k1 = b.slice < 0 ? out.p.k : std::min(out.p.k, k0 + pr.kslice);
    out.blocks.push_back({b.m0, b.m1, b.n0, b.n1, b.slice, k1 - k0});
  }
  return out;
}

bool schedule_fits(const Params& p, const Schedule& s) {
  if (s.path == Path::automatic && !s.swap) return true;
  const detail::KernelFamily& f = detail::family(s.isa == Isa::automatic ? detected_isa() : s.isa);
  return detail::path_refusal(p, s, f).empty();
}

Family family_of(Isa isa) {
  const detail::KernelFamily& f = detail::family(isa);
  const detail::Blocking& b = detail::blocking(isa);
  return {f.name, detail::cpu_table_row_name(isa), f.mr, f.nr, b.mc, b.kc};
}

}  // namespace attain::gemm
