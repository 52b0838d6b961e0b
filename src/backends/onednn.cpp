// oneDNN's matmul primitive (linked: oneDNN exports no BLAS names, so nothing clashes).
// fp32 runs everywhere; bf16/fp16 run only where oneDNN can create a primitive descriptor
// for them on this CPU (2.6 cannot on AVX2): supports() tries, and reports oneDNN's answer.
#include <fmt/format.h>

#include <dnnl.hpp>
#include <map>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "backends/backends.hpp"

namespace attain::backends {

namespace {

using dnnl::matmul;
using dnnl::memory;
using dims = memory::dims;

struct Context {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
};
Context& ctx() {
  static Context c;
  return c;
}

// oneDNN's CPU runtime here is OpenMP: it runs with the calling thread's OpenMP thread count.
void use_threads(int t) {
#ifdef _OPENMP
  if (omp_get_max_threads() != t) omp_set_num_threads(t);
#else
  (void)t;
#endif
}

const char* isa_name(dnnl::cpu_isa isa) {
  switch (isa) {
    case dnnl::cpu_isa::sse41:
      return "sse41";
    case dnnl::cpu_isa::avx:
      return "avx";
    case dnnl::cpu_isa::avx2:
      return "avx2";
    case dnnl::cpu_isa::avx2_vnni:
      return "avx2_vnni";
    case dnnl::cpu_isa::avx512_core:
      return "avx512_core";
    case dnnl::cpu_isa::avx512_core_vnni:
      return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core_bf16:
      return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_amx:
      return "avx512_core_amx";
    default:
      return "other";
  }
}

memory::data_type dnnl_type(DType t) {
  switch (t) {
    case DType::f32:
      return memory::data_type::f32;
    case DType::bf16:
      return memory::data_type::bf16;
    case DType::f16:
      return memory::data_type::f16;
    default:
      return memory::data_type::undef;
  }
}

// One matmul problem: `batch` x (m,k) . (n,k)^T, A and C row-major, W read transposed
// through its strides (no copy).
struct MatmulShape {
  std::int64_t batch = 1, m = 0, n = 0, k = 0;
};

struct Descs {
  memory::desc src, wei, dst;
};

Descs make_descs(const MatmulShape& s, const Op& op) {
  const auto in = dnnl_type(op.dtype), out = dnnl_type(op.out_dtype());
  if (s.batch == 1 && op.kind != OpKind::batched_gemm)
    return {memory::desc({s.m, s.k}, in, dims{s.k, 1}),    // A (m,k) row-major
            memory::desc({s.k, s.n}, in, dims{1, s.k}),    // W^T (k,n) = W (n,k) row-major
            memory::desc({s.m, s.n}, out, dims{s.n, 1})};  // C (m,n) row-major
  return {memory::desc({s.batch, s.m, s.k}, in, dims{s.m * s.k, s.k, 1}),
          memory::desc({s.batch, s.k, s.n}, in, dims{s.n * s.k, 1, s.k}),
          memory::desc({s.batch, s.m, s.n}, out, dims{s.m * s.n, s.n, 1})};
}

matmul::primitive_desc make_pd(const Descs& d) {
  return matmul::primitive_desc(matmul::desc(d.src, d.wei, d.dst), ctx().engine);
}

// A primitive with its memory objects; data handles are pointed at each sub-problem.
struct Bound {
  matmul prim;
  memory src, wei, dst;
  explicit Bound(const Descs& d)
      : prim(make_pd(d)),
        src(d.src, ctx().engine, nullptr),
        wei(d.wei, ctx().engine, nullptr),
        dst(d.dst, ctx().engine, nullptr) {}
  void run(const void* a, const void* w, void* c) {
    src.set_data_handle(const_cast<void*>(a));
    wei.set_data_handle(const_cast<void*>(w));
    dst.set_data_handle(c);
    prim.execute(ctx().stream, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DST, dst}});
  }
};

class OnednnKernel final : public Kernel {
 public:
  OnednnKernel(TensorSet& set, int threads) : op_(set.op()), threads_(threads) {
    a_ = set["a"].data, w_ = set["w"].data, c_ = set["c"].data;
    use_threads(threads_);
    switch (op_.kind) {
      case OpKind::gemm:
        bound(op_.m);
        break;
      case OpKind::batched_gemm:
        single_ = std::make_unique<Bound>(make_descs({op_.batch, op_.m, op_.n, op_.k}, op_));
        break;
      case OpKind::grouped_gemm:
        if (op_.layout == GroupedLayout::contiguous)
          offsets_ = set["offsets"].as<std::int32_t>();
        else
          counts_ = set["counts"].as<std::int32_t>();
        // One primitive per distinct rows-per-group of the op's distribution; rows that the
        // offsets/counts tensors bring at run time beyond these get theirs on first use.
        for (const auto r : op_.group_rows())
          if (r > 0) bound(r);
        break;
      case OpKind::mla_decode:
        throw std::logic_error("mla_decode is not a matmul");
    }
  }

  void run() override {
    use_threads(threads_);
    if (single_) {
      single_->run(a_, w_, c_);
    } else if (op_.kind == OpKind::gemm) {
      bound(op_.m).run(a_, w_, c_);
    } else {
      run_groups();
    }
    ctx().stream.wait();
  }

 private:
  Bound& bound(std::int64_t m) {
    auto it = by_rows_.find(m);
    if (it == by_rows_.end())
      it =
          by_rows_.emplace(m, std::make_unique<Bound>(make_descs({1, m, op_.n, op_.k}, op_))).first;
    return *it->second;
  }

  void run_groups() {
    const std::size_t in = dtype_size(op_.dtype), out = dtype_size(op_.out_dtype());
    const std::int64_t n = op_.n, k = op_.k;
    const std::int64_t rows = op_.total_rows(), max_m = op_.max_group_rows();
    for (std::int64_t g = 0; g < op_.groups; ++g) {
      std::int64_t row0 = 0, m = 0;
      if (offsets_) {
        row0 = offsets_[g], m = offsets_[g + 1] - row0;
        if (row0 < 0 || m < 0 || row0 + m > rows)
          throw std::runtime_error(fmt::format("group {} has invalid offsets", g));
      } else {
        row0 = g * max_m, m = counts_[g];
        if (m < 0 || m > max_m)
          throw std::runtime_error(fmt::format("group {} has invalid count {}", g, m));
      }
      if (m == 0) continue;
      bound(m).run(a_ + static_cast<std::size_t>(row0 * k) * in,
                   w_ + static_cast<std::size_t>(g * n * k) * in,
                   c_ + static_cast<std::size_t>(row0 * n) * out);
    }
  }

  Op op_;
  int threads_;
  std::byte *a_ = nullptr, *w_ = nullptr, *c_ = nullptr;
  const std::int32_t* offsets_ = nullptr;
  const std::int32_t* counts_ = nullptr;
  std::unique_ptr<Bound> single_;
  std::map<std::int64_t, std::unique_ptr<Bound>> by_rows_;
};

class OnednnBackend final : public Backend {
 public:
  std::string_view name() const override { return "onednn"; }
  std::string version() const override {
    const dnnl_version_t* v = dnnl_version();
    return fmt::format("oneDNN {}.{}.{} (git {}, OpenMP runtime, ISA {})", v->major, v->minor,
                       v->patch, v->hash, isa_name(dnnl::get_effective_cpu_isa()));
  }
  Support supports(const Op& op) const override {
    if (op.kind == OpKind::mla_decode) return Support::no("oneDNN has no MLA decode attention");
    if (dnnl_type(op.dtype) == memory::data_type::undef)
      return Support::no(fmt::format("oneDNN {}.{} has no {} matmul", dnnl_version()->major,
                                     dnnl_version()->minor, dtype_name(op.dtype)));
    // Ask oneDNN itself: it refuses data types this CPU has no implementation for.
    const MatmulShape s{op.kind == OpKind::batched_gemm ? op.batch : 1,
                        op.kind == OpKind::grouped_gemm ? std::max<std::int64_t>(1, op.m) : op.m,
                        op.n, op.k};
    try {
      (void)make_pd(make_descs(s, op));
    } catch (const dnnl::error& e) {
      return Support::no(
          fmt::format("oneDNN {}.{}.{} cannot create a {} matmul on this CPU ({}): {}",
                      dnnl_version()->major, dnnl_version()->minor, dnnl_version()->patch,
                      dtype_name(op.dtype), isa_name(dnnl::get_effective_cpu_isa()), e.what()));
    }
    return Support::yes();
  }
  std::unique_ptr<Kernel> prepare(TensorSet& set, const RunOptions& opt) override {
    const Support s = supports(set.op());
    if (!s.ok) throw std::invalid_argument("onednn: " + s.reason);
    return std::make_unique<OnednnKernel>(set, std::max(1, opt.threads));
  }
};

}  // namespace

std::unique_ptr<Backend> make_onednn(std::string* why) {
  try {
    (void)ctx();
  } catch (const dnnl::error& e) {
    if (why) *why = std::string("oneDNN cannot create a CPU engine: ") + e.what();
    return nullptr;
  }
  return std::make_unique<OnednnBackend>();
}

}  // namespace attain::backends
