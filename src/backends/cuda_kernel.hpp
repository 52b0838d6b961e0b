// What the CUDA backends (cublaslt.cpp, attain_cuda.cpp) share: a tensor set mirrored on the
// device, and a Kernel that times its launches with events (Kernel::device_timed).
#pragma once

#ifdef ATTAIN_HAVE_CUDA

#include <string>
#include <string_view>
#include <vector>

#include "attain/backend.hpp"
#include "kernels/cuda/runtime.hpp"

namespace attain::backends {

// The set's tensors on the device, uploaded once at construction (outputs included, so a
// poisoned output stays poisoned where a kernel skips it): the harness's tensors are host
// memory, and a GPU library call would find its operands in device memory.
class DeviceSet {
 public:
  DeviceSet(const TensorSet& set, cudaStream_t s);
  void* operator[](std::string_view name) const;
  template <class T>
  T* as(std::string_view name) const {
    return static_cast<T*>((*this)[name]);
  }
  void download_outputs(TensorSet& set, cudaStream_t s) const;

 private:
  std::vector<std::string> names_;
  std::vector<cuda::DeviceBuffer> bufs_;
};

// run(): [untimed: prepare_run(), L2 flush] event, launch(), event, outputs copied back, sync.
class CudaKernel : public Kernel {
 public:
  void run() final;
  bool device_timed() const final { return true; }
  double last_device_seconds() const final { return last_; }

 protected:
  CudaKernel(TensorSet& set, const RunOptions& opt);
  virtual void prepare_run(cudaStream_t) {}  // host-side planning and its uploads (untimed)
  virtual void launch(cudaStream_t s) = 0;   // the timed work
  TensorSet& set_;
  cuda::Stream stream_;
  DeviceSet dev_;

 private:
  bool hot_;
  cuda::EventTimer timer_;
  double last_ = 0.0;
};

// "no CUDA device: ..." when none is usable, else empty.
std::string cuda_unavailable_reason();

}  // namespace attain::backends

#endif  // ATTAIN_HAVE_CUDA
