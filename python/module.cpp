// The compiled core of the Python package `attn` (attn._attn; python/attn/__init__.py re-exports
// it): NumPy in, NumPy out, attn's kernels in between.
#include <pybind11/pybind11.h>

#include "bindings.hpp"
#include "errors.hpp"

PYBIND11_MODULE(_attn, m) {
  m.doc() = R"doc(attn: self-attention in plain C++, from Python.

    attn.sdpa(q, k, v, *, causal=False, scale=None, attn_mask=None, dtype="float32")
    attn.MultiheadAttention.from_safetensors(path, num_heads)(query, key=None, value=None, ...)
    attn.Vectors.load(path=None)
    attn.embed(text, vectors=None, scale=None) -> (tokens, embeddings, attention)
    attn.TextModel.load(path): .embed(text), .predict(text, k=5), .evaluate(path), .labels
    attn.embed(text, model=TextModel or path) -> (tokens, embeddings, None)

Arrays are NumPy float32; results are NumPy float32 arrays. Errors are attn.Error (a
ValueError), as attn.UsageError or attn.InputError; wrong array types raise TypeError.)doc";
  m.attr("__version__") = ATTN_VERSION;
  attn::python::register_errors(m);
  attn::python::bind_sdpa(m);
  attn::python::bind_multihead_attention(m);
  attn::python::bind_vectors(m);
  attn::python::bind_text_model(m);
  attn::python::bind_translation_model(m);
  attn::python::bind_train(m);
}
