// Owned, 64-byte-aligned storage for an op's tensors (see op_tensors()).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "attain/op.hpp"

namespace attain {

struct Tensor {
  TensorDesc desc;
  std::byte* data = nullptr;
  template <class T>
  T* as() const {
    return reinterpret_cast<T*>(data);
  }
  std::int64_t numel() const { return desc.numel(); }
  std::size_t nbytes() const { return desc.nbytes(); }
};

// All tensors of one op. Each tensor is followed by a 64-byte guard region
// filled with a pattern, so writes past the end are caught (guards_intact()).
class TensorSet {
 public:
  explicit TensorSet(const Op& op);
  TensorSet(const TensorSet&) = delete;
  TensorSet& operator=(const TensorSet&) = delete;

  const Op& op() const { return op_; }
  Tensor& operator[](std::string_view name);  // throws std::out_of_range
  const Tensor& operator[](std::string_view name) const;
  bool has(std::string_view name) const;
  std::vector<Tensor>& all() { return tensors_; }
  const std::vector<Tensor>& all() const { return tensors_; }
  std::size_t total_bytes() const { return bytes_; }
  bool guards_intact() const;

 private:
  Op op_;
  std::vector<Tensor> tensors_;
  std::unique_ptr<std::byte, void (*)(std::byte*)> storage_;
  std::size_t bytes_ = 0;
};

// Bytes TensorSet(op) allocates (the harness refuses ops that would not fit).
std::size_t tensor_set_bytes(const Op& op);

}  // namespace attain
