// attain's Python module (attain._core) over libattain: the catalog here, the kernels in
// kernels.cpp, the runs (bench, probe, report, cluster) in runs.cpp. Tensors cross without a
// copy (views.cpp); every call into C++ releases the GIL.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "attain/catalog.hpp"
#include "attain/op.hpp"
#include "bindings.hpp"

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
ModelConfig model_of(const std::string& model, bool is_json, bool assume_llama) {
  return is_json ? parse_model_config(model, "config", {assume_llama})
                 : load_bundled_model(model, {assume_llama});
}

// (the ops, the notes the config reading left for the user). dtype "": the config's own.
py::tuple catalog(const std::string& model, bool is_json, bool assume_llama,
                  const std::string& phase, const std::vector<std::int64_t>& tokens,
                  std::int64_t context, const std::string& dtype) {
  if (phase != "prefill" && phase != "decode")
    throw py::value_error("phase: 'prefill' or 'decode', not '" + phase + "'");
  if (tokens.empty()) throw py::value_error("tokens: give at least one");
  if (context <= 0) throw py::value_error("context: must be positive");
  const bool own_dtype = dtype.empty();
  const DType dt = own_dtype ? DType::bf16 : parse_dt(dtype, "dtype");
  std::vector<CatalogOp> ops;
  ModelConfig cfg;
  {
    py::gil_scoped_release free;
    cfg = model_of(model, is_json, assume_llama);
    for (std::int64_t t : tokens) {
      if (t <= 0) throw InputError("tokens: every count must be positive");
      PassSpec pass;
      pass.phase = phase, pass.tokens = t, pass.context = phase == "prefill" ? t : context;
      pass.dtype = own_dtype ? cfg.dtype : dt;
      for (auto& op : model_ops(cfg, pass)) ops.push_back(std::move(op));
    }
  }
  return py::make_tuple(op_dicts(ops), cfg.notes);
}

std::vector<py::dict> suite_ops(const std::string& name) {
  std::vector<CatalogOp> ops;
  {
    py::gil_scoped_release free;
    ops = attain::suite(name);
  }
  return op_dicts(ops);
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "attain's C++ core: the op catalog, the CPU kernels and the runs";
  py::register_exception_translator([](std::exception_ptr e) {
    try {
      if (e) std::rethrow_exception(e);
    } catch (const InputError& x) {
      PyErr_SetString(PyExc_ValueError, x.what());
    }
  });
  m.attr("__version__") = std::string(ATTAIN_VERSION);
  m.def("catalog", &catalog, py::arg("model"), py::arg("is_json"), py::arg("assume_llama"),
        py::arg("phase"), py::arg("tokens"), py::arg("context"), py::arg("dtype"));
  m.def("suite", &suite_ops, py::arg("name"));
  m.def("suite_names", &suite_names);
  m.def("bundled_models", &bundled_models);
  python::bind_kernels(m);
  python::bind_runs(m);
}
