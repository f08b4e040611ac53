// The parts of the Python module, each adding itself to it (module.cpp calls them in order).
#pragma once

#include <pybind11/pybind11.h>

namespace attn::python {

namespace py = pybind11;

void bind_sdpa(py::module_& m);
void bind_multihead_attention(py::module_& m);
void bind_vectors(py::module_& m);  // attn.Vectors and attn.embed

}  // namespace attn::python
