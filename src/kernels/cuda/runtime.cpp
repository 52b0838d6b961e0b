#include "kernels/cuda/runtime.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace attain::cuda {

namespace {

DeviceInfo query() {
  DeviceInfo d;
  cudaRuntimeGetVersion(&d.runtime_version);
  cudaDriverGetVersion(&d.driver_version);
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    cudaGetLastError();  // clear the sticky-free error so later calls start clean
    d.reason = fmt::format("no CUDA device: {}", cudaGetErrorString(err));
    return d;
  }
  if (count == 0) {
    d.reason = "no CUDA device: the runtime reports 0 devices";
    return d;
  }
  cudaDeviceProp p{};
  if (const cudaError_t e = cudaGetDeviceProperties(&p, 0); e != cudaSuccess) {
    d.reason = fmt::format("no CUDA device: {}", cudaGetErrorString(e));
    return d;
  }
  d.present = true;
  d.name = p.name;
  d.cc_major = p.major, d.cc_minor = p.minor;
  d.sm_count = p.multiProcessorCount;
  d.l2_bytes = p.l2CacheSize;
  d.global_bytes = static_cast<std::int64_t>(p.totalGlobalMem);
  return d;
}

}  // namespace

const DeviceInfo& device_info() {
  static const DeviceInfo info = query();
  return info;
}

std::string describe(const DeviceInfo& d) {
  if (!d.present) return d.reason;
  return fmt::format("{} (sm_{}{}, {} SMs, {} MiB L2, {} GiB; runtime {}.{}, driver {}.{})", d.name,
                     d.cc_major, d.cc_minor, d.sm_count, d.l2_bytes >> 20, d.global_bytes >> 30,
                     d.runtime_version / 1000, d.runtime_version % 1000 / 10,
                     d.driver_version / 1000, d.driver_version % 1000 / 10);
}

void check(cudaError_t err, const char* what, const char* file, int line) {
  if (err == cudaSuccess) return;
  throw std::runtime_error(
      fmt::format("{} failed at {}:{}: {}", what, file, line, cudaGetErrorString(err)));
}

DeviceBuffer::DeviceBuffer(std::size_t bytes) {
  reserve(bytes);
}
DeviceBuffer::~DeviceBuffer() {
  if (p_) cudaFree(p_);
}
DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept
    : p_(std::exchange(o.p_, nullptr)), n_(std::exchange(o.n_, 0)) {}
DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (p_) cudaFree(p_);
    p_ = std::exchange(o.p_, nullptr);
    n_ = std::exchange(o.n_, 0);
  }
  return *this;
}
void DeviceBuffer::reserve(std::size_t bytes) {
  if (bytes <= n_ && p_) return;
  if (p_) ATTAIN_CUDA_CHECK(cudaFree(p_));
  p_ = nullptr, n_ = 0;
  // Never zero bytes: a valid pointer keeps kernels' argument checks simple.
  ATTAIN_CUDA_CHECK(cudaMalloc(&p_, std::max<std::size_t>(bytes, 256)));
  n_ = bytes;
}
void DeviceBuffer::upload(const void* host, std::size_t bytes, cudaStream_t s) {
  if (bytes > n_) throw std::logic_error("DeviceBuffer::upload past the end");
  if (bytes) ATTAIN_CUDA_CHECK(cudaMemcpyAsync(p_, host, bytes, cudaMemcpyHostToDevice, s));
}
void DeviceBuffer::download(void* host, std::size_t bytes, cudaStream_t s) const {
  if (bytes > n_) throw std::logic_error("DeviceBuffer::download past the end");
  if (bytes) ATTAIN_CUDA_CHECK(cudaMemcpyAsync(host, p_, bytes, cudaMemcpyDeviceToHost, s));
}

Stream::Stream() {
  ATTAIN_CUDA_CHECK(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking));
}
Stream::~Stream() {
  if (s_) cudaStreamDestroy(s_);
}
void Stream::sync() const {
  ATTAIN_CUDA_CHECK(cudaStreamSynchronize(s_));
}

EventTimer::EventTimer() {
  ATTAIN_CUDA_CHECK(cudaEventCreate(&a_));
  ATTAIN_CUDA_CHECK(cudaEventCreate(&b_));
}
EventTimer::~EventTimer() {
  if (a_) cudaEventDestroy(a_);
  if (b_) cudaEventDestroy(b_);
}
void EventTimer::start(cudaStream_t s) {
  ATTAIN_CUDA_CHECK(cudaEventRecord(a_, s));
}
void EventTimer::stop(cudaStream_t s) {
  ATTAIN_CUDA_CHECK(cudaEventRecord(b_, s));
}
double EventTimer::seconds() const {
  ATTAIN_CUDA_CHECK(cudaEventSynchronize(b_));
  float ms = 0;
  ATTAIN_CUDA_CHECK(cudaEventElapsedTime(&ms, a_, b_));
  return static_cast<double>(ms) * 1e-3;
}

L2Flusher::L2Flusher()
    : buf_(static_cast<std::size_t>(std::max<std::int64_t>(device_info().l2_bytes, 8 << 20)) * 2) {}
void L2Flusher::flush(cudaStream_t s) {
  ATTAIN_CUDA_CHECK(cudaMemsetAsync(buf_.get(), 0, buf_.bytes(), s));
}

}  // namespace attain::cuda
