// attn.Vectors (static word vectors, the embedded default included) and attn.embed (text →
// tokens, contextual embeddings and attention by basic self-attention).
#include <fmt/format.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "arrays.hpp"
#include "attn/embed.hpp"
#include "attn/tokenizer.hpp"
#include "attn/error.hpp"
#include "attn/vectors.hpp"
#include "bindings.hpp"

namespace attn::python {

namespace {

constexpr const char* class_doc =
    R"doc(Static word vectors: GloVe, word2vec (text or binary), fastText .vec, or attn's
.attnvec, detected from the content. Vectors.load() with no path gives the embedded default,
the 50,000 most frequent words of GloVe 6B 100d.

len(v), v.dim, v.source, "word" in v, v["word"] (a float32 copy), v.nearest(vector, k).
A number the vectors lack ("1990", "3.5") reads as the mean of their rows for "zero" … "ten",
in v[...] as in embed (the embedded default has no number rows).)doc";

constexpr const char* embed_doc =
    R"doc(embed(text, vectors=None, scale=None, strict=False, model=None)
    -> (tokens, embeddings, attention)

Contextual embeddings of a text by basic self-attention: E holds the static vectors of its
tokens, A = softmax(E·Eᵀ·scale) row by row, C = A·E.

vectors: an attn.Vectors; None is the embedded default.
scale: None or "sqrt" is 1/sqrt(d); "none" is 1; a number is used as is.
strict: raise attn.UsageError on a token not in the vectors, instead of leaving it out.

Returns tokens (list of str, the tokens that took part), embeddings C float32 [N, d] and
attention A float32 [N, N]. Tokens not in the vectors are left out with a UserWarning naming
them; a text with no known token raises attn.UsageError.

model: an attn.TextModel or the path of a model file from attn train, instead of vectors and
scale: returns (tokens, embeddings float32 [L, E], None), the output of the model's last
attention block for each token, before pooling (causal for next-word models).)doc";

// Loaded on first use, then shared: parsing the embedded table widens 5 million float16 values.
std::shared_ptr<vectors> default_vectors() {
  static std::shared_ptr<vectors> shared = std::make_shared<vectors>(vectors::load_default());
  return shared;
}

std::shared_ptr<vectors> load(const std::optional<std::filesystem::path>& path) {
  if (!path) return default_vectors();
  auto v = std::make_shared<vectors>();
  {
    py::gil_scoped_release release;
    *v = vectors::load(path->string());
  }
  for (const auto& w : v->warnings()) user_warning(w);
  return v;
}

scale_spec scale_of(py::handle scale) {
  if (scale.is_none()) return {};
  if (py::isinstance<py::str>(scale)) return scale_spec::parse(scale.cast<std::string>());
  if (!PyNumber_Check(scale.ptr()) || py::isinstance<py::bool_>(scale))
    throw py::type_error("scale must be None, 'sqrt', 'none' or a number");
  return scale_spec::parse(fmt::format("{}", scale.cast<double>()));
}

py::tuple embed_py(const std::string& text, std::shared_ptr<vectors> vocab, const py::object& scale,
                   bool strict, const py::object& model) {
  if (!model.is_none()) {
    if (vocab || !scale.is_none())
      throw_usage("model= excludes vectors= and scale=: a trained model has its own embeddings "
                  "and scale");
    return embed_with_model(text, model, strict);
  }
  if (!vocab) vocab = default_vectors();
  const embed_options options{scale_of(scale), strict};
  embedding e;
  {
    py::gil_scoped_release release;
    e = embed(text, *vocab, options);
  }
  if (!e.unknown.empty())
    user_warning(
        fmt::format("left out of attention, not in the vectors: {}", fmt::join(e.unknown, " ")));
  return py::make_tuple(e.tokens, to_numpy(e.steps.context), to_numpy(e.steps.weights));
}

}  // namespace

void user_warning(const std::string& message) {
  PyErr_WarnEx(PyExc_UserWarning, message.c_str(), 2);
  if (PyErr_Occurred()) throw py::error_already_set();  // warnings turned into errors
}

void bind_vectors(py::module_& m) {
  using namespace pybind11::literals;
  py::class_<vectors, std::shared_ptr<vectors>>(m, "Vectors", class_doc)
      .def_static("load", &load, "path"_a = py::none(),
                  "Loads word vectors from a file (any supported format); no path, or "
                  "\"default\", gives the embedded default. Raises attn.InputError naming the "
                  "file and line on a malformed file; duplicate words keep the first vector, "
                  "with a UserWarning.")
      .def("__len__", [](const vectors& v) { return v.size(); })
      .def_property_readonly("dim", &vectors::dim)
      .def_property_readonly("source", &vectors::source, "The path, or '<default>'.")
      .def("__contains__",
           [](const vectors& v, const std::string& w) { return v.lookup(w).has_value(); })
      .def("__getitem__",
           [](const vectors& v, const std::string& w) {
             auto row = v.lookup(w);
             if (!row) throw py::key_error(w);
             auto values = *row;
             return to_numpy(tensor({v.dim()}, std::vector<float>(values.begin(), values.end())));
           })
      .def(
          "nearest",
          [](const vectors& v, const py::object& vector, int64_t k) {
            const array_view a = float32_input(vector, "vector");
            if (a.values.rank() != 1 || a.values.dim(0) != v.dim())
              throw_usage(fmt::format("vector has shape {}, expected [{}]",
                                      shape_to_string(a.values.shape()), v.dim()));
            std::vector<std::pair<std::string, float>> out;
            for (const neighbor& n : v.nearest(a.values.values(), k))
              out.emplace_back(std::string(v.word(n.index)), n.similarity);
            return out;
          },
          "vector"_a, "k"_a = 10,
          "The k words with the highest cosine similarity to vector, as (word, similarity).")
      .def("__repr__", [](const vectors& v) {
        return fmt::format("attn.Vectors(source='{}', size={}, dim={})", v.source(), v.size(),
                           v.dim());
      });

  m.def("embed", &embed_py, embed_doc, "text"_a, "vectors"_a = py::none(), "scale"_a = py::none(),
        "strict"_a = false, "model"_a = py::none());
  m.def("tokenize", [](std::string_view text) { return tokenize(text); }, "text"_a,
        R"doc(tokenize(text) -> list of str

attn's word tokens, as every command reads text: lowercased (Unicode's simple mapping for
Latin, Greek and Cyrillic), punctuation split off, English clitics split as the Penn Treebank
does ("didn't" -> "did", "n't"); numbers and hyphenated words stay whole.)doc");
}

}  // namespace attn::python
