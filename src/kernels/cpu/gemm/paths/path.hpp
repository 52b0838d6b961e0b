// The paths: each computes a Problem its own way, behind one interface, and the frame (executor,
// heuristic) knows them only through it. `path_impl` lists them as oneDNN lists its
// implementations.
//   decode  (paths/decode.cpp)  small M: W streamed once, converted in registers
//   direct  (paths/direct.cpp)  mid-size M: W read in place against a packed A^T
//   packed  (paths/packed.cpp)  the BLIS loop nest, both operands packed; takes every problem
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cpu/gemm/frame/problem.hpp"

namespace attain::gemm::detail {

struct PathImpl {
  Path id;
  // "" where the path takes p with family f (on the swapped operands where `swap`: Schedule::swap
  // is a transform applied before the path, detail::swapped); otherwise why not, for the error.
  std::string (*accepts)(const Params& p, const KernelFamily& f, bool swap);
  // The problem's route on this path (make_problem calls it last): the kernels and the operand
  // forms it multiplies (bf16 pairs, k pairs, fp8 scales).
  void (*bind)(Problem& pr);
  // Floats of the region's scratch the path needs before the blocks run (converted A, A^T) ...
  std::int64_t (*scratch_floats)(const Problem& pr);
  // ... and its use: where the converted operands go, and the pieces of work on A that the
  // region runs before the blocks (`threads`: the region's).
  void (*prepare)(Problem& pr, float* scratch, int threads, std::vector<Pack>& packs);
  // The blocks of C, each with its cost, that the region shares out (the plan the tuner's model
  // prices).
  void (*plan)(const Problem& pr, std::vector<Block>& out);
  void (*run_block)(const Block& b);
};

// Scratch floats of the direct path's packed A^T for M x K: every panel of `panel` rows over all
// of K, as fp32 values or (kw = 2) words of two bf16 (the heuristic bounds it).
inline std::int64_t direct_at_floats(std::int64_t m, std::int64_t k, std::int64_t kw, int panel) {
  return round_up(ceil_div(m, panel) * panel * (k / kw), 16);
}

// Why schedule s cannot run p with family f, "" where it can: its path's conditions, or the direct
// path's where the path is left to the engine and the swap asked for (nothing to check where both
// are left to it). gemm()'s checks and schedule_fits() both ask here.
std::string path_refusal(const Params& p, const Schedule& s, const KernelFamily& f);

extern const PathImpl kDecodePath, kDirectPath, kPackedPath;
const PathImpl& path_impl(Path p);  // p resolved (not automatic)

// Called with every block the executor runs, from the thread that runs it (nullptr: none). For
// the tests that hold the executor to the plan the tuner sees (gemm::plan).
void set_block_observer(void (*observer)(const Block& b));

}  // namespace attain::gemm::detail
