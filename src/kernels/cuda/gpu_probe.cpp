#include "kernels/cuda/gpu_probe.hpp"

#include <algorithm>
#include <chrono>
#include <vector>

#include "kernels/cuda/kernels.hpp"
#include "kernels/cuda/lt_gemm.hpp"
#include "kernels/cuda/runtime.hpp"

namespace attain::cuda {

namespace {

// Median device seconds of `reps` runs of `body`, each after an L2 flush (untimed), after
// warm-up runs for at least `warm_s` seconds (clocks idle low and ramp under load).
template <class Body>
double median_seconds(Body&& body, int reps, double warm_s, cudaStream_t s) {
  L2Flusher flusher;
  EventTimer timer;
  const auto t0 = std::chrono::steady_clock::now();
  do {
    body();
    ATTAIN_CUDA_CHECK(cudaStreamSynchronize(s));
  } while (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < warm_s);
  std::vector<double> times;
  for (int i = 0; i < reps; ++i) {
    flusher.flush(s);
    timer.start(s);
    body();
    timer.stop(s);
    times.push_back(timer.seconds());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

double gemm_tflops(DType dt, std::int64_t n, cudaStream_t s) {
  LtGemmShape sh;
  sh.dtype = dt, sh.m = sh.n = sh.k = n;
  sh.block_scales = false;  // per-tensor scales (1.0): the tensor cores' own ceiling
  LtGemm g(sh);
  const std::size_t eb = dt == DType::fp8 ? 1 : 2;
  const auto elems = static_cast<std::size_t>(n * n);
  DeviceBuffer a(elems * eb), w(elems * eb), c(elems * 2);
  launch_fill_random(a.get(), elems * eb, dt == DType::fp8, 1, s);
  launch_fill_random(w.get(), elems * eb, dt == DType::fp8, 2, s);
  const double sec =
      median_seconds([&] { g.run(a.get(), w.get(), c.get(), nullptr, nullptr, s); }, 20, 0.3, s);
  return 2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n) / sec /
         1e12;
}

}  // namespace

GpuCeilings probe_gpu(std::int64_t gemm_size, std::int64_t copy_bytes) {
  GpuCeilings g;
  const DeviceInfo& d = device_info();
  g.device = describe(d);
  if (!d.present) return g;
  g.present = true;
  g.library = cublaslt_version();
  Stream stream;
  const cudaStream_t s = stream.get();
  {
    const auto half = static_cast<std::size_t>(copy_bytes / 2 / 16 * 16);
    DeviceBuffer src(half), dst(half);
    launch_fill_random(src.get(), half, false, 3, s);
    const double sec =
        median_seconds([&] { launch_copy(src.get(), dst.get(), half, s); }, 20, 0.2, s);
    g.copy_bytes = static_cast<std::int64_t>(2 * half);
    g.copy_gbps = 2.0 * static_cast<double>(half) / sec / 1e9;
  }
  g.gemm_size = gemm_size;
  g.bf16_tflops = gemm_tflops(DType::bf16, gemm_size, s);
  if (d.cc_major >= 9 || (d.cc_major == 8 && d.cc_minor >= 9)) {
    g.fp8_tflops = gemm_tflops(DType::fp8, gemm_size, s);
    g.fp8_scaling = "e4m3, per-tensor scales, bf16 output";
  }
  return g;
}

}  // namespace attain::cuda
