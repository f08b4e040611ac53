// The parts of the Python module, each adding itself to it (module.cpp calls them in order).
#pragma once

#include <pybind11/pybind11.h>

#include <string>

namespace attn::python {

namespace py = pybind11;

void bind_sdpa(py::module_& m);
void bind_multihead_attention(py::module_& m);
void bind_vectors(py::module_& m);     // attn.Vectors and attn.embed
void bind_text_model(py::module_& m);  // attn.TextModel
void bind_train(py::module_& m);       // attn.train

// attn.embed(text, model=...): a TextModel, or the path of a model file, gives (tokens,
// embeddings [L, E], None) — the last attention block's output per token.
py::tuple embed_with_model(const std::string& text, const py::object& model, bool strict);

// A UserWarning (an exception when warnings are turned into errors).
void user_warning(const std::string& message);

}  // namespace attn::python
