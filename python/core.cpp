// attain's Python module (attain._core): the catalog and the CPU GEMM engine over libattain.
// Arrays cross without a copy (the buffer protocol); every call into C++ releases the GIL.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <thread>
#include <vector>

#include "attain/catalog.hpp"
#include "attain/gemm.hpp"
#include "attain/op.hpp"

namespace py = pybind11;
using namespace attain;

namespace {

// A catalog op as Python sees it: plain attributes.
py::dict op_dict(const CatalogOp& c) {
  const Op& o = c.op;
  py::dict d;
  d["spec"] = o.spec();
  d["kind"] = std::string(kind_name(o.kind));
  d["dtype"] = std::string(dtype_name(o.dtype));
  d["m"] = o.m, d["n"] = o.n, d["k"] = o.k, d["batch"] = o.batch, d["groups"] = o.groups;
  d["flops"] = o.flops(), d["bytes"] = o.bytes();
  d["model"] = c.prov.model, d["layer"] = c.prov.layer, d["phase"] = c.prov.phase;
  d["tokens"] = c.prov.tokens, d["context"] = c.prov.context, d["count"] = c.prov.count;
  return d;
}

std::vector<py::dict> op_dicts(const std::vector<CatalogOp>& ops) {
  std::vector<py::dict> out;
  out.reserve(ops.size());
  for (const auto& c : ops) out.push_back(op_dict(c));
  return out;
}

DType parse_dt(const std::string& s, const char* arg) {
  const auto d = parse_dtype(s);
  if (!d) throw py::value_error(std::string(arg) + ": unknown dtype '" + s + "'");
  return *d;
}

// model: a bundled name, a config.json path, or the text of one (a dict is dumped by the
// Python side).
ModelConfig model_of(const std::string& model, bool is_json) {
  return is_json ? parse_model_config(model, "config") : load_bundled_model(model);
}

std::vector<py::dict> catalog(const std::string& model, bool is_json, const std::string& phase,
                              const std::vector<std::int64_t>& tokens, std::int64_t context,
                              const std::string& dtype) {
  if (phase != "prefill" && phase != "decode")
    throw py::value_error("phase: 'prefill' or 'decode', not '" + phase + "'");
  if (tokens.empty()) throw py::value_error("tokens: give at least one");
  const DType dt = parse_dt(dtype, "dtype");
  std::vector<CatalogOp> ops;
  {
    py::gil_scoped_release free;
    const ModelConfig cfg = model_of(model, is_json);
    for (std::int64_t t : tokens) {
      if (t <= 0) throw InputError("tokens: every count must be positive");
      PassSpec pass;
      pass.phase = phase, pass.tokens = t, pass.context = phase == "prefill" ? t : context;
      pass.dtype = dt;
      for (auto& op : model_ops(cfg, pass)) ops.push_back(std::move(op));
    }
  }
  return op_dicts(ops);
}

std::vector<py::dict> suite_ops(const std::string& name) {
  std::vector<CatalogOp> ops;
  {
    py::gil_scoped_release free;
    ops = attain::suite(name);
  }
  return op_dicts(ops);
}

// numpy's dtype -> attain's (fp32, fp16); anything else is refused naming the argument.
DType array_dtype(const py::array& x, const char* arg) {
  if (x.dtype().is(py::dtype::of<float>())) return DType::f32;
  if (x.dtype().kind() == 'f' && x.dtype().itemsize() == 2) return DType::f16;
  throw py::value_error(std::string(arg) + ": dtype " + std::string(py::str(x.dtype())) +
                        " (numpy arrays: float32 or float16)");
}

void need_matrix(const py::array& x, const char* arg) {
  if (x.ndim() != 2)
    throw py::value_error(std::string(arg) + ": a 2-D array, not " + std::to_string(x.ndim()) +
                          "-D");
  if (!(x.flags() & py::array::c_style))
    throw py::type_error(
        std::string(arg) +
        ": not C-contiguous (rows with K contiguous; pass numpy.ascontiguousarray)");
}

// C = A . W^T: A (M, K), W (N, K), C (M, N), each row-major and contiguous.
py::array run_gemm(py::array a, py::array w, py::object out, py::object out_dtype,
                   py::object threads, const std::string& schedule) {
  need_matrix(a, "a");
  need_matrix(w, "w");
  gemm::Params p;
  p.a_type = array_dtype(a, "a"), p.b_type = array_dtype(w, "w");
  p.m = a.shape(0), p.k = a.shape(1), p.n = w.shape(0);
  if (w.shape(1) != p.k)
    throw py::value_error(
        "w: shape (" + std::to_string(w.shape(0)) + ", " + std::to_string(w.shape(1)) +
        ") does not match a's K = " + std::to_string(p.k) + " (C = a . w^T: w is (N, K))");
  DType ct = p.a_type == DType::f16 && p.b_type == DType::f16 ? DType::f16 : DType::f32;
  if (!out_dtype.is_none()) {
    ct = parse_dt(py::str(out_dtype), "out_dtype");
    if (ct != DType::f32 && ct != DType::f16)
      throw py::value_error("out_dtype: float32 or float16 for numpy outputs");
  }
  py::array c;
  if (out.is_none()) {
    c = ct == DType::f32 ? py::array(py::array_t<float>({p.m, p.n}))
                         : py::array(py::dtype("float16"), {p.m, p.n});
  } else {
    c = out.cast<py::array>();
    need_matrix(c, "out");
    if (c.shape(0) != p.m || c.shape(1) != p.n)
      throw py::value_error("out: shape (" + std::to_string(c.shape(0)) + ", " +
                            std::to_string(c.shape(1)) + "), expected (" + std::to_string(p.m) +
                            ", " + std::to_string(p.n) + ")");
    if (!c.writeable()) throw py::value_error("out: read-only");
    ct = array_dtype(c, "out");
  }
  p.c_type = ct;
  p.a = a.data(), p.b = w.data(), p.c = c.mutable_data();
  p.threads = threads.is_none()
                  ? static_cast<int>(std::max(1u, std::thread::hardware_concurrency()))
                  : threads.cast<int>();
  if (p.threads < 1) throw py::value_error("threads: 1 or more");
  if (schedule != "default") {
    try {
      p.schedule = gemm::parse_schedule(schedule);
    } catch (const std::invalid_argument& e) {
      throw py::value_error(std::string("schedule: ") + e.what());
    }
  }
  {
    py::gil_scoped_release free;
    gemm::gemm(p);
  }
  return c;
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "attain's C++ core: the op catalog and the CPU GEMM engine";
  py::register_exception_translator([](std::exception_ptr e) {
    try {
      if (e) std::rethrow_exception(e);
    } catch (const InputError& x) {
      PyErr_SetString(PyExc_ValueError, x.what());
    }
  });
  m.attr("__version__") = std::string(ATTAIN_VERSION);
  m.def("catalog", &catalog, py::arg("model"), py::arg("is_json"), py::arg("phase"),
        py::arg("tokens"), py::arg("context"), py::arg("dtype"));
  m.def("suite", &suite_ops, py::arg("name"));
  m.def("suite_names", &suite_names);
  m.def("bundled_models", &bundled_models);
  m.def("gemm", &run_gemm, py::arg("a"), py::arg("w"), py::arg("out"), py::arg("out_dtype"),
        py::arg("threads"), py::arg("schedule"));
}
