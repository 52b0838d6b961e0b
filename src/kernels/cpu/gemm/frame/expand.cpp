// Batched and grouped calls as lists of items (one Params each), and whether a call's items run
// in one region (fused) or one region each.
#include <algorithm>
#include <cstddef>
#include <functional>
#include <stdexcept>
#include <vector>

#include "core/util.hpp"
#include "kernels/cpu/gemm/dispatch.hpp"
#include "kernels/cpu/gemm/frame/frame.hpp"

namespace attain::gemm {

namespace detail {

namespace {

// Group g's weights: (N, K) rows at b + g * N * ldb, scales at b_scale + g * ceil(N/128) *
// ldb_scale.
Params group_params(const Params& p, std::int64_t g) {
  Params q = p;
  const std::int64_t ldb = p.ldb != 0 ? p.ldb : p.k;
  const std::int64_t ldbs = p.ldb_scale != 0 ? p.ldb_scale : ceil_div(p.k, kFp8Block);
  q.b = static_cast<const std::byte*>(p.b) +
        g * p.n * ldb * static_cast<std::int64_t>(dtype_size(p.b_type));
  if (p.b_scale != nullptr) q.b_scale = p.b_scale + g * ceil_div(p.n, kFp8Block) * ldbs;
  return q;
}

// A fork/join of the pool in rough_ns's units (a few microseconds): work under it runs in one
// region rather than one per item.
constexpr double kRegionRoughNs = 8e3;

}  // namespace

void expand_items(const Call& c, std::vector<Params>& out) {
  const Params& p = c.p;
  if (c.form == Form::single) {
    out.push_back(p);
    return;
  }
  if (c.form == Form::batched) {
    const BatchStrides& st = c.strides;
    for (std::int64_t b = 0; b < c.items; ++b) {
      Params q = p;
      q.a = static_cast<const std::byte*>(p.a) +
            b * st.a * static_cast<std::int64_t>(dtype_size(p.a_type));
      q.b = static_cast<const std::byte*>(p.b) +
            b * st.b * static_cast<std::int64_t>(dtype_size(p.b_type));
      q.c =
          static_cast<std::byte*>(p.c) + b * st.c * static_cast<std::int64_t>(dtype_size(p.c_type));
      if (p.a_scale != nullptr) q.a_scale = p.a_scale + b * st.a_scale;
      if (p.b_scale != nullptr) q.b_scale = p.b_scale + b * st.b_scale;
      out.push_back(q);
    }
    return;
  }
  const std::int64_t lda = p.lda != 0 ? p.lda : p.k, ldc = p.ldc != 0 ? p.ldc : p.n;
  const std::int64_t ldas = p.lda_scale != 0 ? p.lda_scale : ceil_div(p.k, kFp8Block);
  const auto a_es = static_cast<std::int64_t>(dtype_size(p.a_type));
  const auto c_es = static_cast<std::int64_t>(dtype_size(p.c_type));
  for (std::int64_t g = 0; g < c.items; ++g) {
    std::int64_t r0 = 0, rows = 0;
    if (c.form == Form::grouped_contiguous) {
      r0 = c.index[g];
      const std::int64_t r1 = c.index[g + 1];
      if (r0 < 0 || r1 < r0 || r1 > p.m)
        throw std::invalid_argument("gemm: group offsets out of range");
      rows = r1 - r0;
    } else {
      if (c.index[g] < 0 || c.index[g] > p.m)
        throw std::invalid_argument("gemm: masked count out of range");
      r0 = g * p.m;
      rows = c.index[g];
    }
    Params q = group_params(p, g);
    q.m = rows;
    q.lda = lda;
    q.ldc = ldc;
    q.a = static_cast<const std::byte*>(p.a) + r0 * lda * a_es;
    q.c = static_cast<std::byte*>(p.c) + r0 * ldc * c_es;
    if (p.a_scale != nullptr) q.a_scale = p.a_scale + r0 * ldas;
    out.push_back(q);
  }
}

void drop_empty(std::vector<Params>& v, std::size_t first) {
  v.erase(std::remove_if(v.begin() + static_cast<std::ptrdiff_t>(first), v.end(),
                         [](const Params& q) { return q.m == 0 || q.n == 0; }),
          v.end());
}

bool fuse_pays(const std::vector<Params>& items, int threads) {
  thread_local std::vector<double> cost;
  cost.clear();
  double total = 0;
  for (const Params& q : items)
    if (q.m > 0 && q.n > 0) total += cost.emplace_back(rough_ns(q.b_type, q.m, q.n, q.k));
  if (cost.size() < 2 || threads < 2) return false;
  // The items dealt largest first to the least loaded thread, against all threads on each item
  // in turn plus a fork/join each.
  std::sort(cost.begin(), cost.end(), std::greater<>());
  thread_local std::vector<double> load;
  load.assign(static_cast<std::size_t>(threads), 0.0);
  for (const double x : cost) *std::min_element(load.begin(), load.end()) += x;
  const double fused = *std::max_element(load.begin(), load.end());
  return fused <= total / threads + static_cast<double>(cost.size()) * kRegionRoughNs;
}

int call_threads(const Call& c) {
  return c.p.schedule.threads != 0 ? c.p.schedule.threads : c.p.threads;
}

}  // namespace detail

bool fuses_items(const Call& c) {
  using detail::expand_items, detail::fuse_pays, detail::call_threads;
  if (c.form == Form::single || c.p.schedule.fuse_items == Fuse::off) return false;
  if (c.p.schedule.fuse_items == Fuse::on) return true;
  std::vector<Params> items;
  expand_items(c, items);
  return fuse_pays(items, call_threads(c));
}

}  // namespace attain::gemm
