// The frame's pieces that call one another across its files: argument checks (check.cpp), the
// heuristic (heuristic.cpp), batched and grouped calls as items (expand.cpp); the executor
// (executor.cpp) runs what they make.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "attain/gemm.hpp"

namespace attain::gemm::detail {

// Throws std::invalid_argument ("gemm: ...") for a call the engine cannot run. `fused`: the call's
// items share one region, so the grid is blocks per item (any size).
void check_params(const Params& p, bool fused);
void check_call(const Call& c);

// Every automatic field of p's schedule filled. `blocks`: the grid size to aim for when none is
// given (the region's threads, or with fused items the share of them one item gets).
Schedule resolve_with(const Params& p, int blocks);

// A call's items (one for Form::single), appended to out, empty ones included.
void expand_items(const Call& c, std::vector<Params>& out);
// Items from `first` on with no rows or columns dropped (their C is not touched).
void drop_empty(std::vector<Params>& v, std::size_t first);
// Fuse::automatic's choice for a call's items on `threads`.
bool fuse_pays(const std::vector<Params>& items, int threads);
int call_threads(const Call& c);  // the schedule's thread count, else Params::threads

// The C bytes a call writes (all its items) from which the packed path writes fp32 C past the
// caches (Problem::stream_c): twice the LLC, so that no cache could keep it for its reader anyway.
// A reference, so that tests can lower it to run the streaming stores on small products.
std::int64_t& stream_c_min_bytes();
// Whether a call whose items write `c_bytes` of C in all streams it.
bool streams_c(std::int64_t c_bytes);
// The C bytes the items write in all: M x N x C's element size, summed.
std::int64_t c_bytes(std::span<const Params> items);

}  // namespace attain::gemm::detail
