#ifdef ATTAIN_HAVE_CUDA

#include "backends/cuda_kernel.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace attain::backends {

namespace {

// One flush buffer (twice the L2) for every kernel of the process.
cuda::L2Flusher& flusher() {
  static cuda::L2Flusher f;
  return f;
}

}  // namespace

DeviceSet::DeviceSet(const TensorSet& set, cudaStream_t s) {
  for (const Tensor& t : set.all()) {
    names_.push_back(t.desc.name);
    bufs_.emplace_back(t.nbytes());
    // Outputs too: whatever the host holds (the harness poisons them with NaN) is what an
    // element the kernel fails to write reads back as.
    bufs_.back().upload(t.data, t.nbytes(), s);
  }
  ATTAIN_CUDA_CHECK(cudaStreamSynchronize(s));
}

void* DeviceSet::operator[](std::string_view name) const {
  for (std::size_t i = 0; i < names_.size(); ++i)
    if (names_[i] == name) return bufs_[i].get();
  throw std::out_of_range(fmt::format("no device tensor '{}'", name));
}

void DeviceSet::download_outputs(TensorSet& set, cudaStream_t s) const {
  std::size_t i = 0;
  for (const Tensor& t : set.all()) {
    if (t.desc.output) bufs_[i].download(t.data, t.nbytes(), s);
    ++i;
  }
}

CudaKernel::CudaKernel(TensorSet& set, const RunOptions& opt)
    : set_(set), dev_(set, stream_.get()), hot_(opt.hot) {}

void CudaKernel::run() {
  const cudaStream_t s = stream_.get();
  prepare_run(s);
  if (!hot_) flusher().flush(s);
  timer_.start(s);
  launch(s);
  timer_.stop(s);
  dev_.download_outputs(set_, s);
  stream_.sync();
  last_ = timer_.seconds();
}

std::string cuda_unavailable_reason() {
  const auto& d = cuda::device_info();
  return d.present ? std::string() : d.reason;
}

}  // namespace attain::backends

#endif  // ATTAIN_HAVE_CUDA
