// Tensors from Python as attain sees them: a pointer, a dtype, a shape and strides, borrowed
// from a numpy array (the buffer protocol), any DLPack producer (torch, jax, cupy: a CPU tensor)
// or an attain.Pointer (an address with a dtype, for what neither carries: torch's fp8).
// Nothing is copied; the view keeps its owner alive while it is in use.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>
#include <vector>

#include "attain/dtype.hpp"

namespace attain::python {

namespace py = pybind11;

struct View {
  void* data = nullptr;
  DType dtype = DType::f32;
  std::vector<std::int64_t> shape, strides;  // strides in elements
  bool writable = true;
  bool from_torch = false;  // a torch tensor: results go back as torch tensors
  py::object keep;          // the array, or the DLPack capsule whose deleter frees the export

  std::int64_t dim(std::size_t i) const { return shape[i]; }
  std::size_t ndim() const { return shape.size(); }
  std::int64_t numel() const;
  bool contiguous() const;  // row-major, no gaps
};

// `obj` as a view; `arg` names the argument in every error: TypeError for an object that is no
// tensor, one on another device, or (with `contiguous`) one with gaps or another order;
// ValueError for a dtype attain has no name for.
View view_of(py::handle obj, const char* arg, bool contiguous = true);

// Checks: `ndim` dimensions (ValueError naming `arg` and the shape), one of `dtypes`.
void need_ndim(const View& v, const char* arg, std::size_t ndim);
void need_dtype(const View& v, const char* arg, std::initializer_list<DType> dtypes);
void need_writable(const View& v, const char* arg);
std::string shape_text(const std::vector<std::int64_t>& shape);  // "(4, 5)"
const char* array_dtype_name(DType d);                           // numpy's: "float32", "int32"

// A new C-contiguous tensor for a result: a torch tensor when `like_torch` (torch imported),
// otherwise a numpy array (fp32, fp16; int32; ValueError naming `arg` for bf16 or fp8, which
// numpy has no type for).
View new_tensor(const std::vector<std::int64_t>& shape, DType dtype, bool like_torch,
                const char* arg);

}  // namespace attain::python
