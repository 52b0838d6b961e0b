// attain's CPU kernels from Python: gemm (C = A . W^T), grouped_gemm in DeepGEMM's masked
// layout and mla_decode in FlashMLA's argument order. Tensors are borrowed (views.hpp); every
// shape, dtype and stride is checked here, before any work, and each error names its argument.
#include <pybind11/stl.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <mutex>
#include <thread>

#include "attain/gemm.hpp"
#include "attain/mla.hpp"
#include "attain/op.hpp"
#include "bindings.hpp"
#include "core/util.hpp"
#include "views.hpp"

namespace attain::python {

namespace {

int threads_of(const py::object& threads) {
  if (threads.is_none()) return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int t = threads.cast<int>();
  if (t < 1) throw py::value_error("threads: 1 or more, not " + std::to_string(t));
  return t;
}

// C's dtype when the caller names none: a pair of 16-bit inputs of one dtype keeps it, fp8
// gives bf16 (DeepGEMM's output) in torch, anything else fp32 (numpy has no bf16).
DType default_out(DType a, DType w, bool torch) {
  DType c = DType::f32;
  if (a == w && (a == DType::bf16 || a == DType::f16)) c = a;
  if (a == DType::fp8 && w == DType::fp8) c = DType::bf16;
  return c == DType::bf16 && !torch ? DType::f32 : c;
}

DType out_dtype_of(const py::object& out_dtype, DType dflt) {
  if (out_dtype.is_none()) return dflt;
  const std::string s = py::str(out_dtype);
  const auto d = parse_dtype(s);
  if (!d || (*d != DType::f32 && *d != DType::bf16 && *d != DType::f16))
    throw py::value_error("out_dtype: fp32, bf16 or fp16, not '" + s + "'");
  return *d;
}

constexpr std::initializer_list<DType> kInputTypes = {DType::f32, DType::bf16, DType::f16,
                                                      DType::fp8};
constexpr std::initializer_list<DType> kOutTypes = {DType::f32, DType::bf16, DType::f16};

// The result tensor: `out` checked against `shape`, or a new one like the inputs.
View output(const py::object& out, const std::vector<std::int64_t>& shape, DType dtype,
            bool like_torch) {
  if (out.is_none()) return new_tensor(shape, dtype, like_torch, "out");
  View c = view_of(out, "out");
  if (c.shape != shape)
    throw py::value_error("out: shape " + shape_text(c.shape) + ", expected " + shape_text(shape));
  need_dtype(c, "out", kOutTypes);
  need_writable(c, "out");
  return c;
}

// fp8 operands carry one fp32 scale per 128 x 128 (weights) or 1 x 128 (activations) block,
// DeepSeek's layout: `scale` of `shape`; other dtypes take none.
const float* scales(const View& x, const py::object& scale, const char* arg,
                    const std::vector<std::int64_t>& shape, std::vector<View>& keep) {
  if (x.dtype != DType::fp8) {
    if (!scale.is_none())
      throw py::value_error(std::string(arg) + ": scales apply to fp8 operands only");
    return nullptr;
  }
  if (scale.is_none())
    throw py::value_error(std::string(arg) + ": an fp8 operand needs its block scales " +
                          shape_text(shape) + " float32");
  keep.push_back(view_of(scale, arg));
  need_dtype(keep.back(), arg, {DType::f32});
  if (keep.back().shape != shape)
    throw py::value_error(std::string(arg) + ": shape " + shape_text(keep.back().shape) +
                          ", expected " + shape_text(shape) + " (one per 128-wide K block)");
  return static_cast<const float*>(keep.back().data);
}

gemm::Schedule schedule_of(const std::string& schedule) {
  if (schedule == "default") return {};
  try {
    return gemm::parse_schedule(schedule);
  } catch (const std::invalid_argument& e) {
    throw py::value_error(std::string("schedule: ") + e.what());
  }
}

// One checked gemm call: its operands (kept alive) and its parameters.
struct GemmCall {
  View a, w, c;
  std::vector<View> keep;  // the scales
  gemm::Params p;
};

GemmCall prepare_gemm(py::handle a_in, py::handle w_in, const py::object& out,
                      const py::object& out_dtype, const py::object& a_scale,
                      const py::object& w_scale, const py::object& threads,
                      const std::string& schedule) {
  GemmCall g{view_of(a_in, "a"), view_of(w_in, "w"), {}, {}, {}};
  const View &a = g.a, &w = g.w;
  gemm::Params& p = g.p;
  need_ndim(a, "a", 2);
  need_ndim(w, "w", 2);
  need_dtype(a, "a", kInputTypes);
  need_dtype(w, "w", kInputTypes);
  p.a_type = a.dtype, p.b_type = w.dtype;
  p.m = a.dim(0), p.k = a.dim(1), p.n = w.dim(0);
  if (w.dim(1) != p.k)
    throw py::value_error("w: shape " + shape_text(w.shape) + " does not match a's K = " +
                          std::to_string(p.k) + " (C = a . w^T: w is (N, K))");
  const std::int64_t kb = ceil_div(p.k, kFp8Block);
  p.a_scale = scales(a, a_scale, "a_scale", {p.m, kb}, g.keep);
  p.b_scale = scales(w, w_scale, "w_scale", {ceil_div(p.n, kFp8Block), kb}, g.keep);
  const bool torch = a.from_torch || w.from_torch;
  g.c =
      output(out, {p.m, p.n}, out_dtype_of(out_dtype, default_out(a.dtype, w.dtype, torch)), torch);
  p.c_type = g.c.dtype;
  p.a = a.data, p.b = w.data, p.c = g.c.data;
  p.threads = threads_of(threads);
  p.schedule = schedule_of(schedule);
  return g;
}

py::object gemm_call(py::handle a_in, py::handle w_in, py::object out, py::object out_dtype,
                     py::object a_scale, py::object w_scale, py::object threads,
                     const std::string& schedule) {
  const GemmCall g = prepare_gemm(a_in, w_in, out, out_dtype, a_scale, w_scale, threads, schedule);
  {
    py::gil_scoped_release free;
    gemm::gemm(g.p);
  }
  return out.is_none() ? g.c.keep : out;
}

// The C++ side of the binding's overhead (scripts/python-overhead.py): the same checked call
// made `reps` times in a C++ loop, each call's seconds.
std::vector<double> gemm_seconds(py::handle a_in, py::handle w_in, py::object out,
                                 py::object threads, int reps) {
  const GemmCall g =
      prepare_gemm(a_in, w_in, out, py::none(), py::none(), py::none(), threads, "default");
  std::vector<double> t(static_cast<std::size_t>(std::max(0, reps)));
  py::gil_scoped_release free;
  for (double& x : t) {
    const auto t0 = std::chrono::steady_clock::now();
    gemm::gemm(g.p);
    x = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  return t;
}

// DeepGEMM's masked layout: a (G, max_m, K), w (G, N, K), out (G, max_m, N); masked_m[g] rows
// of group g are computed, the others of out left as they were.
py::object grouped_call(py::handle a_in, py::handle w_in, py::handle masked_in, py::object out,
                        py::object out_dtype, py::object a_scale, py::object w_scale,
                        py::object threads) {
  const View a = view_of(a_in, "a"), w = view_of(w_in, "w");
  const View counts = view_of(masked_in, "masked_m");
  need_ndim(a, "a", 3);
  need_ndim(w, "w", 3);
  need_ndim(counts, "masked_m", 1);
  need_dtype(a, "a", kInputTypes);
  need_dtype(w, "w", kInputTypes);
  need_dtype(counts, "masked_m", {DType::i32});
  const std::int64_t groups = a.dim(0);
  gemm::Params p;
  p.a_type = a.dtype, p.b_type = w.dtype;
  p.m = a.dim(1), p.k = a.dim(2), p.n = w.dim(1);
  if (w.dim(0) != groups || w.dim(2) != p.k)
    throw py::value_error("w: shape " + shape_text(w.shape) + ", expected (" +
                          std::to_string(groups) + ", N, " + std::to_string(p.k) +
                          ") for a of shape " + shape_text(a.shape));
  if (counts.dim(0) != groups)
    throw py::value_error("masked_m: " + std::to_string(counts.dim(0)) + " counts for " +
                          std::to_string(groups) + " groups");
  const auto* cnt = static_cast<const std::int32_t*>(counts.data);
  for (std::int64_t g = 0; g < groups; ++g)
    if (cnt[g] < 0 || cnt[g] > p.m)
      throw py::value_error("masked_m: group " + std::to_string(g) + " has " +
                            std::to_string(cnt[g]) + " rows, outside 0.." + std::to_string(p.m));
  std::vector<View> keep;
  const std::int64_t kb = ceil_div(p.k, kFp8Block);
  p.a_scale = scales(a, a_scale, "a_scale", {groups, p.m, kb}, keep);
  p.b_scale = scales(w, w_scale, "w_scale", {groups, ceil_div(p.n, kFp8Block), kb}, keep);
  const bool torch = a.from_torch || w.from_torch;
  const View c = output(out, {groups, p.m, p.n},
                        out_dtype_of(out_dtype, default_out(a.dtype, w.dtype, torch)), torch);
  p.c_type = c.dtype;
  p.a = a.data, p.b = w.data, p.c = c.data;
  p.threads = threads_of(threads);
  {
    py::gil_scoped_release free;
    gemm::grouped_gemm_masked(p, groups, cnt);
  }
  return out.is_none() ? c.keep : out;
}

// One decoder, reused while it is large enough: its workspace and threads cost more to make
// than a small decode step.
struct MlaState {
  std::mutex lock;
  std::unique_ptr<MlaDecoder> dec;
  std::int64_t rows = 0;
  int threads = 0;
};

MlaState& mla_state() {
  static MlaState s;
  return s;
}

// FlashMLA's flash_mla_with_kvcache: q (b, s_q, h, 576), k_cache (blocks, 64, 1, 576) (or
// without the head axis; fp8: uint8 rows of 656 bytes), block_table (b, max_blocks) int32,
// cache_seqlens (b,) int32 -> (out (b, s_q, h, 512), lse (b, h, s_q) float32).
py::tuple mla_call(py::handle q_in, py::handle cache_in, py::handle table_in, py::handle seqlens_in,
                   int head_dim_v, py::object softmax_scale, bool causal, py::object threads) {
  const View q = view_of(q_in, "q"), cache = view_of(cache_in, "k_cache");
  const View table = view_of(table_in, "block_table"), lens = view_of(seqlens_in, "cache_seqlens");
  if (head_dim_v != kMlaDv)
    throw py::value_error("head_dim_v: " + std::to_string(head_dim_v) + " (MLA's V is the " +
                          std::to_string(kMlaDv) + " latent values)");
  need_ndim(q, "q", 4);
  need_dtype(q, "q", {DType::bf16, DType::f32});
  if (q.dim(3) != kMlaDk)
    throw py::value_error("q: last dimension " + std::to_string(q.dim(3)) + ", expected " +
                          std::to_string(kMlaDk) + " (512 latent + 64 rope)");
  if (cache.ndim() != 3 && cache.ndim() != 4)
    throw py::value_error("k_cache: (blocks, 64, 1, row) or (blocks, 64, row), not " +
                          shape_text(cache.shape));
  if (cache.ndim() == 4 && cache.dim(2) != 1)
    throw py::value_error("k_cache: " + std::to_string(cache.dim(2)) +
                          " KV heads (MLA's latent cache has 1)");
  need_dtype(cache, "k_cache", {DType::bf16, DType::f32, DType::u8});
  MlaParams p;
  p.dtype = cache.dtype == DType::u8 ? DType::fp8 : cache.dtype;
  const std::int64_t row = cache.shape.back();
  const std::int64_t want_row = p.dtype == DType::fp8 ? kMlaFp8RowBytes : kMlaDk;
  if (cache.dim(1) != kMlaBlock || row != want_row)
    throw py::value_error("k_cache: shape " + shape_text(cache.shape) + ", expected (blocks, " +
                          std::to_string(kMlaBlock) + ", 1, " + std::to_string(want_row) + ")");
  const DType q_want = p.dtype == DType::f32 ? DType::f32 : DType::bf16;
  if (q.dtype != q_want)
    throw py::value_error("q: dtype " + std::string(array_dtype_name(q.dtype)) + " with a " +
                          std::string(dtype_name(p.dtype)) + " cache (takes " +
                          std::string(array_dtype_name(q_want)) + ")");
  p.b = q.dim(0), p.s_q = q.dim(1), p.h = q.dim(2);
  if (!causal && p.s_q > 1)
    throw py::value_error("causal: attain's decode with s_q > 1 is causal (causal=True)");
  need_ndim(table, "block_table", 2);
  need_dtype(table, "block_table", {DType::i32});
  need_ndim(lens, "cache_seqlens", 1);
  need_dtype(lens, "cache_seqlens", {DType::i32});
  if (table.dim(0) != p.b || lens.dim(0) != p.b)
    throw py::value_error("block_table / cache_seqlens: " + std::to_string(table.dim(0)) + " / " +
                          std::to_string(lens.dim(0)) + " rows for a batch of " +
                          std::to_string(p.b));
  p.max_blocks = table.dim(1), p.num_blocks = cache.dim(0);
  const View o = new_tensor({p.b, p.s_q, p.h, kMlaDv}, q.dtype, q.from_torch, "out");
  const View lse = new_tensor({p.b, p.h, p.s_q}, DType::f32, q.from_torch, "lse");
  p.q = q.data, p.kcache = cache.data, p.o = o.data, p.lse = static_cast<float*>(lse.data);
  p.block_table = static_cast<const std::int32_t*>(table.data);
  p.seqlens = static_cast<const std::int32_t*>(lens.data);
  if (!softmax_scale.is_none()) p.softmax_scale = softmax_scale.cast<float>();
  const int nthreads = threads_of(threads);
  {
    py::gil_scoped_release free;
    mla_check(p);
    MlaState& s = mla_state();
    std::lock_guard<std::mutex> hold(s.lock);
    const std::int64_t rows = p.s_q * p.h;
    if (!s.dec || s.rows < rows || s.threads != nthreads) {
      s.dec.reset();
      s.dec = std::make_unique<MlaDecoder>(std::max(rows, s.rows), nthreads);
      s.rows = std::max(rows, s.rows), s.threads = nthreads;
    }
    s.dec->run(p);
  }
  return py::make_tuple(o.keep, lse.keep);
}

}  // namespace

void bind_kernels(py::module_& m) {
  m.def("gemm", &gemm_call, py::arg("a"), py::arg("w"), py::arg("out"), py::arg("out_dtype"),
        py::arg("a_scale"), py::arg("w_scale"), py::arg("threads"), py::arg("schedule"));
  m.def("_gemm_seconds", &gemm_seconds, py::arg("a"), py::arg("w"), py::arg("out"),
        py::arg("threads"), py::arg("reps"));
  m.def("grouped_gemm", &grouped_call, py::arg("a"), py::arg("w"), py::arg("masked_m"),
        py::arg("out"), py::arg("out_dtype"), py::arg("a_scale"), py::arg("w_scale"),
        py::arg("threads"));
  m.def("mla_decode", &mla_call, py::arg("q"), py::arg("k_cache"), py::arg("block_table"),
        py::arg("cache_seqlens"), py::arg("head_dim_v"), py::arg("softmax_scale"),
        py::arg("causal"), py::arg("threads"));
}

}  // namespace attain::python
