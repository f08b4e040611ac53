// The parts of the Python module, each adding itself to it (module.cpp calls them in order).
#pragma once

#include <pybind11/pybind11.h>

#include <string>

#include "attn/text_model.hpp"
#include "attn/train.hpp"

namespace attn::python {

namespace py = pybind11;

void bind_sdpa(py::module_& m);
void bind_multihead_attention(py::module_& m);
void bind_vectors(py::module_& m);     // attn.Vectors and attn.embed
void bind_text_model(py::module_& m);  // attn.TextModel
void bind_translation_model(py::module_& m);  // attn.TranslationModel
void bind_train(py::module_& m);       // attn.train

// attn.embed(text, model=...): a TextModel, or the path of a model file, gives (tokens,
// embeddings [L, E], None) — the last attention block's output per token.
py::tuple embed_with_model(const std::string& text, const py::object& model, bool strict);

// Whether an epoch's accuracy and eval_loss hold a score: a masked-word or lm run without
// held-out text scores none (its report holds zeros); the other tasks score the training lines
// then. score_or_none: the value, or None where there was no score.
inline bool epoch_scored(const train_epoch_report& r, text_task task) {
  return r.on_validation || !kind_of(task).streamed;
}
inline py::object score_or_none(bool scored, double value) { return scored ? py::object(py::float_(value)) : py::none(); }

// A UserWarning (an exception when warnings are turned into errors).
void user_warning(const std::string& message);

}  // namespace attn::python
