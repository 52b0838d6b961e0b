// Micro-benchmarks of attain::gemm, with OpenBLAS cblas_sgemm beside it (loaded with dlopen
// into this binary only, RTLD_LOCAL | RTLD_DEEPBIND, so no other BLAS can answer for it).
//
// Counted: FLOPs = 2*M*N*K; bytes = A + W read once + C written once, at the stored dtypes.
// Reported per benchmark: GFLOP/s and GB/s (the counters), real time, median of repetitions
// when run with --benchmark_repetitions. Compute-bound shapes run hot (operands stay in the
// caches they fit); the decode shapes rotate through enough weight copies (>= 192 MiB) that every
// call streams W from memory (cold).
//
//   build/bench/bench_gemm --benchmark_filter='decode'      (weight streaming, dtypes, threads)
//   build/bench/bench_gemm --benchmark_filter='square|prefill'
//   build/bench/bench_gemm --benchmark_filter='stages'      (the tile-pipeline ablation)
// On a shared (loaded) machine add --benchmark_repetitions=5 and read the *_min rows' CPU time
// for 1-thread runs.
#include <benchmark/benchmark.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "attain/gemm.hpp"
#include "attain/threadpool.hpp"

namespace {

using attain::DType;
namespace ag = attain::gemm;

// Storage for one problem: A, `copies` weight matrices, C; random values in [-1, 1).
struct Operands {
  std::vector<std::uint8_t> a;
  std::vector<std::vector<std::uint8_t>> w;
  std::vector<float> a_scale, w_scale;
  std::vector<std::uint8_t> c;
  DType t, ct;
  std::int64_t m, n, k;

  Operands(DType dt, std::int64_t m_, std::int64_t n_, std::int64_t k_, int copies)
      : t(dt),
        ct(dt == DType::f32 ? DType::f32 : (dt == DType::f16 ? DType::f16 : DType::bf16)),
        m(m_),
        n(n_),
        k(k_) {
    std::mt19937 rng(42);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    auto fill = [&](std::vector<std::uint8_t>& v, std::int64_t count) {
      v.resize(static_cast<std::size_t>(count) * attain::dtype_size(t));
      for (std::int64_t i = 0; i < count; ++i) {
        const float x = u(rng);
        switch (t) {
          case DType::f32:
            std::memcpy(&v[static_cast<std::size_t>(i) * 4], &x, 4);
            break;
          case DType::bf16: {
            const std::uint16_t h = attain::f32_to_bf16(x);
            std::memcpy(&v[static_cast<std::size_t>(i) * 2], &h, 2);
            break;
          }
          case DType::f16: {
            const std::uint16_t h = attain::f32_to_f16(x);
            std::memcpy(&v[static_cast<std::size_t>(i) * 2], &h, 2);
            break;
          }
          default:
            v[static_cast<std::size_t>(i)] = attain::f32_to_e4m3(x * 400.0f);
            break;
        }
      }
    };
    fill(a, m * k);
    w.resize(static_cast<std::size_t>(copies));
    fill(w[0], n * k);
    for (int i = 1; i < copies; ++i)
      w[static_cast<std::size_t>(i)] = w[0];  // touched, distinct pages
    const std::int64_t kb = (k + 127) / 128;
    a_scale.assign(static_cast<std::size_t>(m * kb), 0.01f);
    w_scale.assign(static_cast<std::size_t>((n + 127) / 128 * kb), 0.01f);
    c.assign(static_cast<std::size_t>(m * n) * attain::dtype_size(ct), 0);
  }
  double flops() const { return 2.0 * static_cast<double>(m * n * k); }
  double bytes() const {
    return static_cast<double>((m * k + n * k) * static_cast<std::int64_t>(attain::dtype_size(t)) +
                               m * n * static_cast<std::int64_t>(attain::dtype_size(ct)));
  }
};

int copies_for_cold(DType t, std::int64_t n, std::int64_t k) {
  const double bytes = static_cast<double>(n * k) * static_cast<double>(attain::dtype_size(t));
  return std::max(2, static_cast<int>(192.0 * 1024 * 1024 / bytes) + 1);
}

void report(benchmark::State& st, const Operands& o) {
  st.counters["GFLOP/s"] =
      benchmark::Counter(o.flops() / 1e9, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["GB/s"] =
      benchmark::Counter(o.bytes() / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}

// args: m, n, k, dtype (0 fp32, 1 bf16, 2 fp16, 3 fp8), threads, stages, isa (0 auto, 1 scalar,
// 2 avx2, 3 avx512), path (0 auto, 1 packed, 2 decode), cold (rotate W copies)
void BM_attain(benchmark::State& st) {
  const DType dts[] = {DType::f32, DType::bf16, DType::f16, DType::fp8};
  const DType t = dts[st.range(3)];
  const bool cold = st.range(8) != 0;
  Operands o(t, st.range(0), st.range(1), st.range(2),
             cold ? copies_for_cold(t, st.range(1), st.range(2)) : 1);
  ag::Params p;
  p.a = o.a.data();
  p.a_type = p.b_type = t;
  p.a_scale = o.a_scale.data();
  p.b_scale = o.w_scale.data();
  p.c = o.c.data();
  p.c_type = o.ct;
  p.m = o.m;
  p.n = o.n;
  p.k = o.k;
  p.threads = static_cast<int>(st.range(4));
  p.stages = static_cast<int>(st.range(5));
  p.schedule.isa = static_cast<ag::Isa>(st.range(6));
  p.schedule.path = static_cast<ag::Path>(st.range(7));
  if (!ag::isa_supported(p.schedule.isa)) {
    st.SkipWithError("isa not supported here");
    return;
  }
  st.SetLabel(ag::describe(ag::resolve(p)));
  std::size_t i = 0;
  for (auto _ : st) {
    p.b = o.w[i++ % o.w.size()].data();
    ag::gemm(p);
    benchmark::ClobberMemory();
  }
  report(st, o);
}

// ---- OpenBLAS, isolated ----
using SgemmFn = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int,
                         float, float*, int);
using SetThreadsFn = void (*)(int);
using ConfigFn = char* (*)();
struct OpenBlas {
  SgemmFn sgemm = nullptr;
  SetThreadsFn set_threads = nullptr;
  std::string config;
  OpenBlas() {
    void* h = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
    if (h == nullptr) return;
    sgemm = reinterpret_cast<SgemmFn>(dlsym(h, "cblas_sgemm"));
    set_threads = reinterpret_cast<SetThreadsFn>(dlsym(h, "openblas_set_num_threads"));
    if (auto cfg = reinterpret_cast<ConfigFn>(dlsym(h, "openblas_get_config"))) config = cfg();
  }
};
const OpenBlas& openblas() {
  static const OpenBlas ob;
  return ob;
}

// args: m, n, k, threads, cold
void BM_openblas(benchmark::State& st) {
  const OpenBlas& ob = openblas();
  if (ob.sgemm == nullptr) {
    st.SkipWithError("libopenblas.so.0 not loadable");
    return;
  }
  const bool cold = st.range(4) != 0;
  Operands o(DType::f32, st.range(0), st.range(1), st.range(2),
             cold ? copies_for_cold(DType::f32, st.range(1), st.range(2)) : 1);
  ob.set_threads(static_cast<int>(st.range(3)));
  st.SetLabel(ob.config);
  const int m = static_cast<int>(o.m), n = static_cast<int>(o.n), k = static_cast<int>(o.k);
  std::size_t i = 0;
  for (auto _ : st) {
    // CblasRowMajor = 101, CblasNoTrans = 111, CblasTrans = 112: C = A . W^T
    ob.sgemm(101, 111, 112, m, n, k, 1.0f, reinterpret_cast<const float*>(o.a.data()), k,
             reinterpret_cast<const float*>(o.w[i++ % o.w.size()].data()), k, 0.0f,
             reinterpret_cast<float*>(o.c.data()), n);
    benchmark::ClobberMemory();
  }
  report(st, o);
}

// ---- dispatch cost of the pool vs an OpenMP parallel region, on an empty job ----
void BM_pool_dispatch(benchmark::State& st) {
  const int t = static_cast<int>(st.range(0));
  for (auto _ : st) attain::ThreadPool::instance().run(t, [](int, int) {});
}
void BM_omp_dispatch(benchmark::State& st) {
  const int t = static_cast<int>(st.range(0));
  for (auto _ : st) {
#pragma omp parallel num_threads(t)
    { benchmark::DoNotOptimize(t); }
  }
}

}  // namespace

// With --benchmark_repetitions=N: the fastest repetition (its CPU column is the figure to read
// on a shared machine: time on the CPU, not time waiting for it).
double min_of(const std::vector<double>& v) {
  return *std::min_element(v.begin(), v.end());
}

// Large fp32 (hot): 2048^3 and a DeepSeek-V3 prefill shape, 1 and 2 threads, each family.
BENCHMARK(BM_attain)
    ->Name("square/attain")
    ->ArgNames({"m", "n", "k", "dt", "thr", "stg", "isa", "path", "cold"})
    ->Args({2048, 2048, 2048, 0, 1, 2, 0, 0, 0})
    ->Args({2048, 2048, 2048, 0, 2, 2, 0, 0, 0})
    ->Args({2048, 2048, 2048, 0, 1, 2, 2, 0, 0})
    ->Args({2048, 2048, 2048, 0, 2, 2, 2, 0, 0})
    ->Args({2048, 2048, 2048, 1, 1, 2, 0, 0, 0})
    ->Args({2048, 2048, 2048, 3, 1, 2, 0, 0, 0})
    ->UseRealTime()
    ->ComputeStatistics("min", min_of)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_openblas)
    ->Name("square/openblas")
    ->ArgNames({"m", "n", "k", "thr", "cold"})
    ->Args({2048, 2048, 2048, 1, 0})
    ->Args({2048, 2048, 2048, 2, 0})
    ->UseRealTime()
    ->ComputeStatistics("min", min_of)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_attain)
    ->Name("prefill/attain")
    ->ArgNames({"m", "n", "k", "dt", "thr", "stg", "isa", "path", "cold"})
    ->Args({1024, 2112, 7168, 0, 1, 2, 0, 0, 0})
    ->Args({1024, 2112, 7168, 0, 2, 2, 0, 0, 0})
    ->Args({128, 4096, 7168, 0, 1, 2, 0, 0, 0})
    ->Args({128, 4096, 7168, 0, 2, 2, 0, 0, 0})
    ->UseRealTime()
    ->ComputeStatistics("min", min_of)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_openblas)
    ->Name("prefill/openblas")
    ->ArgNames({"m", "n", "k", "thr", "cold"})
    ->Args({1024, 2112, 7168, 1, 0})
    ->Args({1024, 2112, 7168, 2, 0})
    ->Args({128, 4096, 7168, 1, 0})
    ->Args({128, 4096, 7168, 2, 0})
    ->UseRealTime()
    ->ComputeStatistics("min", min_of)
    ->Unit(benchmark::kMillisecond);
// Decode: M <= 32 against W (4096 x 7168), cold, every dtype, 1 and 2 threads.
BENCHMARK(BM_attain)
    ->Name("decode/attain")
    ->ArgNames({"m", "n", "k", "dt", "thr", "stg", "isa", "path", "cold"})
    ->ArgsProduct({{1, 8, 32}, {4096}, {7168}, {0, 1, 2, 3}, {1, 2}, {2}, {0}, {0}, {1}})
    ->UseRealTime()
    ->ComputeStatistics("min", min_of)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_openblas)
    ->Name("decode/openblas")
    ->ArgNames({"m", "n", "k", "thr", "cold"})
    ->ArgsProduct({{1, 8, 32}, {4096}, {7168}, {1, 2}, {1}})
    ->UseRealTime()
    ->ComputeStatistics("min", min_of)
    ->Unit(benchmark::kMillisecond);
// The tile-pipeline ablation: stages 1 (no prefetch), 2, 3, 4 on a decode and a packed shape.
BENCHMARK(BM_attain)
    ->Name("stages/attain")
    ->ArgNames({"m", "n", "k", "dt", "thr", "stg", "isa", "path", "cold"})
    ->ArgsProduct({{1}, {4096}, {7168}, {1}, {1, 2}, {1, 2, 3, 4}, {0}, {0}, {1}})
    ->ArgsProduct({{2048}, {2048}, {2048}, {0}, {1}, {1, 2, 3, 4}, {0}, {0}, {0}})
    ->UseRealTime()
    ->ComputeStatistics("min", min_of)
    ->Unit(benchmark::kMillisecond);
// Decode/packed crossover in M (for the heuristic's table).
BENCHMARK(BM_attain)
    ->Name("crossover/attain")
    ->ArgNames({"m", "n", "k", "dt", "thr", "stg", "isa", "path", "cold"})
    ->ArgsProduct({{8, 16, 32, 64}, {4096}, {7168}, {0, 1}, {1}, {2}, {0}, {1, 2}, {1}})
    ->UseRealTime()
    ->ComputeStatistics("min", min_of)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_pool_dispatch)->Name("dispatch/pool")->Arg(2);
BENCHMARK(BM_omp_dispatch)->Name("dispatch/openmp")->Arg(2);

BENCHMARK_MAIN();
