// The parts of attain._core, each bound by its own file.
#pragma once

#include <pybind11/pybind11.h>

namespace attain::python {

namespace py = pybind11;

void bind_kernels(py::module_& m);  // kernels.cpp: gemm, grouped_gemm, mla_decode
void bind_runs(py::module_& m);     // runs.cpp: bench, results, probe, devices, report, cluster

}  // namespace attain::python
