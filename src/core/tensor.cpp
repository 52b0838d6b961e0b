#include "attain/tensor.hpp"

#include <sys/mman.h>

#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

namespace attain {

namespace {
constexpr std::size_t kAlign = 64;
constexpr std::size_t kHugePage = std::size_t{2} << 20;
constexpr std::size_t kGuard = 64;
constexpr std::byte kGuardByte{0xA5};

std::size_t round_up(std::size_t x) {
  return (x + kAlign - 1) / kAlign * kAlign;
}
void free_storage(std::byte* p) {
  std::free(p);
}
}  // namespace

std::size_t tensor_set_bytes(const Op& op) {
  std::size_t total = 0;
  for (const auto& d : op_tensors(op)) total += round_up(d.nbytes()) + kGuard;
  return total;
}

TensorSet::TensorSet(const Op& op) : op_(op), storage_(nullptr, free_storage) {
  const auto descs = op_tensors(op);
  bytes_ = tensor_set_bytes(op);
  // Sets of 2 MiB and more on 2 MiB pages where the kernel allows (THP "madvise" mode): the
  // probe measures the read bandwidth that sets the roofline on such pages, so the ops are
  // timed under the same memory conditions (and allocating many GiB faults 512x less).
  const bool huge = bytes_ >= kHugePage;
  const std::size_t len =
      huge ? (bytes_ + kHugePage - 1) / kHugePage * kHugePage : round_up(bytes_);
  auto* base = static_cast<std::byte*>(std::aligned_alloc(huge ? kHugePage : kAlign, len));
  if (!base) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
  if (huge) madvise(base, len, MADV_HUGEPAGE);  // advice only
#endif
  storage_.reset(base);
  std::size_t off = 0;
  for (const auto& d : descs) {
    Tensor t{d, base + off};
    const std::size_t sz = round_up(d.nbytes());
    // Slack between the data and the aligned end, and the guard, hold the pattern.
    std::memset(base + off + d.nbytes(), static_cast<int>(kGuardByte), sz - d.nbytes() + kGuard);
    off += sz + kGuard;
    tensors_.push_back(t);
  }
}

Tensor& TensorSet::operator[](std::string_view name) {
  for (auto& t : tensors_)
    if (t.desc.name == name) return t;
  throw std::out_of_range("no tensor '" + std::string(name) + "' in " + op_.spec());
}

const Tensor& TensorSet::operator[](std::string_view name) const {
  return const_cast<TensorSet&>(*this)[name];
}

bool TensorSet::has(std::string_view name) const {
  for (const auto& t : tensors_)
    if (t.desc.name == name) return true;
  return false;
}

bool TensorSet::guards_intact() const {
  for (const auto& t : tensors_) {
    const std::size_t end = round_up(t.nbytes()) + kGuard;
    for (std::size_t i = t.nbytes(); i < end; ++i)
      if (t.data[i] != kGuardByte) return false;
  }
  return true;
}

}  // namespace attain
