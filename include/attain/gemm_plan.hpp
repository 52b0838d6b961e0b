// The CPU GEMM engine seen from its tuner (src/tune) and from the backends: how a call would run
// under a schedule - its path, the route its kernels take and the blocks of C the executor shares
// out - without running it. The cost model prices exactly these blocks, so the plan the tuner
// sees is the plan the executor runs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "attain/gemm.hpp"

namespace attain::gemm {

// Which kernels and operand forms a product takes on its path.
struct Route {
  bool swap = false;        // the swapped operands: C^T = W . A^T (Schedule::swap)
  bool bf16_pairs = false;  // bf16 (or fp8 as exact bf16) multiplied as pairs (vdpbf16ps)
  bool fp8_pairs = false;   // ...and the operands are fp8 x fp8 (byte lookups, block scales)
  bool converts_w = false;  // the direct path converts W to fp32 a tile at a time
  bool k_pairs = false;     // the direct path's k-pairs kernel (few rows of A)
  bool converts_a = false;  // the decode path converts A before the blocks
};

// One block of C as the executor runs it, in the path's operands (C^T where swapped).
struct PlanBlock {
  std::int64_t m0 = 0, m1 = 0, n0 = 0, n1 = 0;
  int slice = -1;      // split-K slice, -1: all of K
  std::int64_t k = 0;  // K the block multiplies (its slice's)
};

struct Plan {
  Params p;    // the operands the path multiplies: the caller's, or swapped (route.swap)
  Schedule s;  // resolved
  Route route;
  int mr = 0, nr = 0;                                       // the packed micro-tile
  int direct_rows = 0, direct_panel = 0, direct_lanes = 0;  // the direct tile, A^T panels
  bool at_in_block = false;  // the direct path's blocks pack their own A^T panels
  int slices = 1;
  std::vector<PlanBlock> blocks;
};

// The plan of one product (an item of a batched or grouped call) under schedule s, which is
// resolved first (resolve() of p with s). Throws std::invalid_argument where s cannot run p.
Plan plan(const Params& p, const Schedule& s);

// Whether the engine takes schedule s for p's shape and storage (the path's and the swap's
// conditions, as gemm() checks them; pointers are not looked at).
bool schedule_fits(const Params& p, const Schedule& s);

// The kernel family's and the CPU row's sizes the tuner builds its candidates around.
struct Family {
  std::string kernel;  // "avx512_12x32"
  std::string row;     // the row of the engine's per-CPU configuration: "zen5", "generic"
  int mr = 0, nr = 0, mc = 0, kc = 0;
};
Family family_of(Isa isa);  // isa concrete and supported

}  // namespace attain::gemm
