// Tensors from Python, borrowed: numpy through the buffer protocol, DLPack producers through
// their capsule, torch's fp8 (which DLPack 0.6 has no code for) and attain.Pointer by address.
#include "views.hpp"

#include <dlpack/dlpack.h>
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <numeric>

namespace attain::python {

namespace {

std::string named(const char* arg, const std::string& what) {
  return std::string(arg) + ": " + what;
}

std::vector<std::int64_t> row_major_strides(const std::vector<std::int64_t>& shape) {
  std::vector<std::int64_t> s(shape.size(), 1);
  for (std::size_t i = shape.size(); i-- > 1;) s[i - 1] = s[i] * shape[i];
  return s;
}

// numpy's dtypes, ml_dtypes' bfloat16 and float8_e4m3fn included. The common ones by kind and
// size (a field read; the name costs about 2 us a call).
DType numpy_dtype(const py::dtype& d, const char* arg) {
  const char kind = d.kind();
  const auto size = d.itemsize();
  if (kind == 'f' && size == 4) return DType::f32;
  if (kind == 'f' && size == 2) return DType::f16;
  if (kind == 'i' && size == 4) return DType::i32;
  if (kind == 'u' && size == 1) return DType::u8;
  const std::string name = py::str(d.attr("name"));
  if (name == "float32") return DType::f32;
  if (name == "float16") return DType::f16;
  if (name == "bfloat16") return DType::bf16;
  if (name == "float8_e4m3fn") return DType::fp8;
  if (name == "int32") return DType::i32;
  if (name == "uint8") return DType::u8;
  throw py::value_error(named(arg, "dtype " + name +
                                       " (float32, float16, bfloat16, float8_e4m3fn; int32 for "
                                       "indices, uint8 for fp8 caches)"));
}

View from_numpy(const py::array& a, const char* arg) {
  View v;
  v.dtype = numpy_dtype(a.dtype(), arg);
  v.data = const_cast<void*>(a.data());
  v.writable = a.writeable();
  const auto item = static_cast<std::int64_t>(a.itemsize());
  for (py::ssize_t i = 0; i < a.ndim(); ++i) {
    v.shape.push_back(a.shape(i));
    if (a.strides(i) % item != 0)
      throw py::type_error(named(arg, "strides that are not whole elements"));
    v.strides.push_back(a.strides(i) / item);
  }
  v.keep = py::reinterpret_borrow<py::object>(a);
  return v;
}

DType dlpack_dtype(const DLDataType& t, const char* arg) {
  if (t.lanes == 1) {
    if (t.code == kDLFloat && t.bits == 32) return DType::f32;
    if (t.code == kDLFloat && t.bits == 16) return DType::f16;
    if (t.code == kDLBfloat && t.bits == 16) return DType::bf16;
    if (t.code == kDLInt && t.bits == 32) return DType::i32;
    if (t.code == kDLUInt && t.bits == 8) return DType::u8;
  }
  const std::string bits = std::to_string(t.bits);
  const std::string name = t.lanes != 1         ? "of " + std::to_string(t.lanes) + " lanes"
                           : t.code == kDLFloat ? "float" + bits
                           : t.code == kDLInt   ? "int" + bits
                           : t.code == kDLUInt  ? "uint" + bits
                                                : "code " + std::to_string(t.code) + "/" + bits;
  throw py::value_error(named(arg, "dtype " + name +
                                       " (takes float32, bfloat16, float16; int32 for indices, "
                                       "uint8 for fp8 caches)"));
}

void need_cpu(py::handle obj, const char* arg) {
  if (!py::hasattr(obj, "__dlpack_device__")) return;
  const auto dev = obj.attr("__dlpack_device__")().cast<py::tuple>();
  const int type = dev[0].cast<int>();
  if (type != kDLCPU)
    throw py::type_error(
        named(arg, "a tensor on DLPack device type " + std::to_string(type) +
                       ", not the CPU (attain runs on the CPU: move it there, e.g. tensor.cpu())"));
}

View from_dlpack(py::handle obj, const char* arg) {
  need_cpu(obj, arg);
  py::object cap = obj.attr("__dlpack__")();
  auto* mt = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(cap.ptr(), "dltensor"));
  if (mt == nullptr) throw py::error_already_set();
  const DLTensor& t = mt->dl_tensor;
  if (t.device.device_type != kDLCPU)
    throw py::type_error(named(arg, "a tensor that is not on the CPU"));
  View v;
  v.dtype = dlpack_dtype(t.dtype, arg);
  v.data = static_cast<char*>(t.data) + t.byte_offset;
  v.shape.assign(t.shape, t.shape + t.ndim);
  v.strides = t.strides ? std::vector<std::int64_t>(t.strides, t.strides + t.ndim)
                        : row_major_strides(v.shape);
  // The capsule's own destructor calls the export's deleter: it is kept, never consumed.
  v.keep = std::move(cap);
  return v;
}

// torch's dtype names ("torch.bfloat16") as attain's.
DType torch_dtype(py::handle t, const char* arg) {
  const std::string name = py::str(t.attr("dtype"));
  static const std::pair<const char*, DType> kNames[] = {
      {"torch.float32", DType::f32}, {"torch.bfloat16", DType::bf16},
      {"torch.float16", DType::f16}, {"torch.float8_e4m3fn", DType::fp8},
      {"torch.int32", DType::i32},   {"torch.uint8", DType::u8}};
  for (const auto& [n, d] : kNames)
    if (name == n) return d;
  throw py::value_error(named(arg, "dtype " + name.substr(name.rfind('.') + 1) +
                                       " (takes float32, bfloat16, float16, float8_e4m3fn; "
                                       "int32 for indices, uint8 for fp8 caches)"));
}

// A torch tensor by its own attributes (address, shape, strides): the same memory its DLPack
// export describes, at a fifth of the cost (the export and the device query take about 4.5 us
// a tensor), and fp8 too, which DLPack 0.6 has no code for.
View from_torch(py::handle t, const char* arg) {
  const DType dtype = torch_dtype(t, arg);
  if (std::string(py::str(t.attr("device").attr("type"))) != "cpu")
    throw py::type_error(named(arg, "a tensor on " + std::string(py::str(t.attr("device"))) +
                                        ", not the CPU (move it there: tensor.cpu())"));
  View v;
  v.dtype = dtype;
  v.data = reinterpret_cast<void*>(t.attr("data_ptr")().cast<std::uintptr_t>());
  v.shape = t.attr("shape").cast<std::vector<std::int64_t>>();
  v.strides = t.attr("stride")().cast<std::vector<std::int64_t>>();
  v.keep = py::reinterpret_borrow<py::object>(t);
  return v;
}

View from_pointer(py::handle p, const char* arg) {
  View v;
  const std::string dt = py::str(p.attr("dtype"));
  const auto d = parse_dtype(dt);
  if (!d && dt != "i32" && dt != "u8")
    throw py::value_error(named(arg, "attain.Pointer dtype '" + dt + "'"));
  v.dtype = d ? *d : dt == "i32" ? DType::i32 : DType::u8;
  v.data = reinterpret_cast<void*>(p.attr("ptr").cast<std::uintptr_t>());
  if (v.data == nullptr) throw py::value_error(named(arg, "attain.Pointer at address 0"));
  v.shape = p.attr("shape").cast<std::vector<std::int64_t>>();
  const py::object strides = p.attr("strides");
  v.strides =
      strides.is_none() ? row_major_strides(v.shape) : strides.cast<std::vector<std::int64_t>>();
  if (v.strides.size() != v.shape.size())
    throw py::value_error(named(arg, "attain.Pointer with " + std::to_string(v.strides.size()) +
                                         " strides for " + std::to_string(v.shape.size()) +
                                         " dimensions"));
  v.writable = !p.attr("readonly").cast<bool>();
  v.keep = py::reinterpret_borrow<py::object>(p);
  return v;
}

bool is_torch_tensor(py::handle obj) {
  const py::handle type = reinterpret_cast<PyObject*>(Py_TYPE(obj.ptr()));
  if (!py::hasattr(type, "__module__")) return false;
  const std::string mod = py::str(type.attr("__module__"));
  return mod == "torch" || mod.rfind("torch.", 0) == 0;
}

}  // namespace

std::int64_t View::numel() const {
  return std::accumulate(shape.begin(), shape.end(), std::int64_t{1},
                         std::multiplies<std::int64_t>());
}

bool View::contiguous() const {
  std::int64_t expect = 1;
  for (std::size_t i = shape.size(); i-- > 0;) {
    if (shape[i] != 1 && strides[i] != expect) return numel() == 0;
    expect *= shape[i];
  }
  return true;
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

View view_of(py::handle obj, const char* arg, bool contiguous) {
  View v;
  if (py::isinstance<py::array>(obj)) {
    v = from_numpy(py::reinterpret_borrow<py::array>(obj), arg);
  } else if (is_torch_tensor(obj)) {
    v = from_torch(obj, arg);
    v.from_torch = true;
  } else if (py::hasattr(obj, "__dlpack__")) {
    v = from_dlpack(obj, arg);
  } else if (py::hasattr(obj, "__attain_pointer__")) {
    v = from_pointer(obj, arg);
  } else {
    throw py::type_error(named(arg, std::string("a numpy array, a DLPack tensor (torch) or an "
                                                "attain.Pointer, not ") +
                                        Py_TYPE(obj.ptr())->tp_name));
  }
  if (contiguous && !v.contiguous())
    throw py::type_error(named(arg,
                               "not C-contiguous (rows with the last dimension contiguous; "
                               "numpy.ascontiguousarray or tensor.contiguous() makes one)"));
  return v;
}

void need_ndim(const View& v, const char* arg, std::size_t ndim) {
  if (v.ndim() != ndim)
    throw py::value_error(named(arg, "a " + std::to_string(ndim) + "-D tensor, not " +
                                         std::to_string(v.ndim()) + "-D " + shape_text(v.shape)));
}

// The names numpy and torch give the dtypes.
const char* array_dtype_name(DType d) {
  switch (d) {
    case DType::f32:
      return "float32";
    case DType::bf16:
      return "bfloat16";
    case DType::f16:
      return "float16";
    case DType::fp8:
      return "float8_e4m3fn";
    case DType::i32:
      return "int32";
    case DType::u8:
      return "uint8";
  }
  return "?";
}

void need_dtype(const View& v, const char* arg, std::initializer_list<DType> dtypes) {
  for (DType d : dtypes)
    if (v.dtype == d) return;
  std::string names;
  for (DType d : dtypes) names += (names.empty() ? "" : ", ") + std::string(array_dtype_name(d));
  throw py::value_error(
      named(arg, "dtype " + std::string(array_dtype_name(v.dtype)) + " (takes " + names + ")"));
}

void need_writable(const View& v, const char* arg) {
  if (!v.writable) throw py::value_error(named(arg, "read-only"));
}

View new_tensor(const std::vector<std::int64_t>& shape, DType dtype, bool like_torch,
                const char* arg) {
  if (like_torch) {
    py::module_ torch = py::module_::import("torch");
    const char* name = dtype == DType::f32    ? "float32"
                       : dtype == DType::bf16 ? "bfloat16"
                       : dtype == DType::f16  ? "float16"
                       : dtype == DType::i32  ? "int32"
                                              : nullptr;
    if (name == nullptr)
      throw py::value_error(named(arg, "no torch dtype for " + std::string(dtype_name(dtype))));
    py::object t = torch.attr("empty")(py::cast(shape), py::arg("dtype") = torch.attr(name));
    View v = view_of(t, arg);
    v.keep = std::move(t);  // the tensor, what the caller gets back
    return v;
  }
  if (dtype != DType::f32 && dtype != DType::f16 && dtype != DType::i32)
    throw py::value_error(named(arg, std::string(dtype_name(dtype)) +
                                         " has no numpy type: pass `out` (a torch tensor, or "
                                         "an attain.Pointer over uint16 storage)"));
  const py::dtype dt = dtype == DType::f32   ? py::dtype::of<float>()
                       : dtype == DType::i32 ? py::dtype::of<std::int32_t>()
                                             : py::dtype("float16");
  return view_of(py::array(dt, shape), arg);
}

}  // namespace attain::python
