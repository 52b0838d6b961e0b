// The CUDA runtime layer every GPU backend uses: device query, checked calls, device
// buffers, event timing and an L2 flush. Host C++ (g++ or nvcc); needs the CUDA runtime API.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace attain::cuda {

// Device 0 as the runtime sees it, queried once per process. When no usable device is present,
// `present` is false and `reason` says why ("no CUDA device: <cudaGetErrorString>").
struct DeviceInfo {
  bool present = false;
  std::string reason;
  std::string name;
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  std::int64_t l2_bytes = 0, global_bytes = 0;
  int driver_version = 0, runtime_version = 0;  // CUDA versions as ints (13000 = 13.0)
};
const DeviceInfo& device_info();
// "NVIDIA H200 (sm_90, 132 SMs, 50 MiB L2)" or the reason there is none.
std::string describe(const DeviceInfo& d);

// Throws std::runtime_error("<what> failed at <file>:<line>: <cudaGetErrorString>").
void check(cudaError_t err, const char* what, const char* file, int line);
#define ATTAIN_CUDA_CHECK(expr) ::attain::cuda::check((expr), #expr, __FILE__, __LINE__)
// After a kernel launch: catches bad launch configurations (not asynchronous faults).
#define ATTAIN_CUDA_CHECK_LAUNCH(name) \
  ::attain::cuda::check(cudaGetLastError(), name, __FILE__, __LINE__)

// Owned device memory (cudaMalloc); movable, not copyable.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* get() const { return p_; }
  template <class T>
  T* as() const {
    return static_cast<T*>(p_);
  }
  std::size_t bytes() const { return n_; }
  // Grows (contents lost) when smaller than `bytes`.
  void reserve(std::size_t bytes);
  void upload(const void* host, std::size_t bytes, cudaStream_t s);  // async on s
  void download(void* host, std::size_t bytes, cudaStream_t s) const;

 private:
  void* p_ = nullptr;
  std::size_t n_ = 0;
};

// One owned stream (non-blocking) per kernel object.
class Stream {
 public:
  Stream();
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return s_; }
  void sync() const;

 private:
  cudaStream_t s_ = nullptr;
};

// Two events around the timed launches; seconds() waits for the second.
class EventTimer {
 public:
  EventTimer();
  ~EventTimer();
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;
  void start(cudaStream_t s);
  void stop(cudaStream_t s);
  double seconds() const;

 private:
  cudaEvent_t a_ = nullptr, b_ = nullptr;
};

// Cold L2: writes a buffer of twice the L2 size (cudaMemsetAsync), which evicts whatever
// the previous run left there. Enqueue it before the timer starts.
class L2Flusher {
 public:
  L2Flusher();
  void flush(cudaStream_t s);

 private:
  DeviceBuffer buf_;
};

}  // namespace attain::cuda
