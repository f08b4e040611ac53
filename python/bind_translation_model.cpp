// attn.TranslationModel: a translator trained by `attn train --task translate` (or
// attn.train(task="translate")): translate, the n best hypotheses with scores and alignments, the
// attention inside, BLEU/chrF evaluation and the pieces it reads.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "arrays.hpp"
#include "attn/translation_model.hpp"
#include "bindings.hpp"

namespace attn::python {

namespace {

constexpr const char* class_doc =
    R"doc(A translator trained by `attn train --task translate`: subword pieces → a pre-norm Transformer
encoder–decoder → beam search. TranslationModel.load(path) reads the safetensors file (the piece
model is inside it).

m.translate(text, beam=5, length_penalty=1.0, max_length=0) -> str; a list of texts -> a list of
    str (translated together on every thread, in input order). max_length 0: twice the source's
    pieces + 10.
m.hypotheses(text, beam=5, n_best=1, length_penalty=1.0, max_length=0, alignment=False) ->
    [{"text", "pieces", "score", "log_probability", "ended", "alignment": [(i, j), …]}], best first.
m.attention(text, beam=5) -> {"source", "target", "read", "text", "encoder", "decoder", "cross"}:
    per layer float32 arrays [H, rows, columns] (cross: written target pieces × source pieces).
m.evaluate(sources, references, beam=5, length_penalty=1.0) -> {"bleu", "chrf", "loss", "pairs",
    "skipped", "precisions", "brevity_penalty", "bleu_signature", "chrf_signature"} (cased
    sacreBLEU, 13a, exponential smoothing; chrF2), as `attn eval` prints it.
m.pieces(text) -> the pieces the model reads. m.config -> its shape. m.save(path).)doc";

std::shared_ptr<translation_model> load(const std::filesystem::path& path) {
  auto m = std::make_shared<translation_model>();
  py::gil_scoped_release release;
  *m = translation_model::load(path.string());
  return m;
}

translation_options options_of(int64_t beam, int64_t n_best, double length_penalty, int64_t max_length, bool alignment) {
  return {.beam = beam, .length_penalty = length_penalty, .n_best = n_best, .max_length = max_length,
          .alignment = alignment};
}

py::object translate(const translation_model& m, const py::object& text, int64_t beam, double length_penalty,
                     int64_t max_length) {
  const translation_options o = options_of(beam, 1, length_penalty, max_length, false);
  if (py::isinstance<py::str>(text)) {
    const std::string source = text.cast<std::string>();
    std::string out;
    {
      py::gil_scoped_release release;
      out = m.translate(source, o).best().text;
    }
    return py::str(out);
  }
  const std::vector<std::string> sources = text.cast<std::vector<std::string>>();
  std::vector<translation> done;
  {
    py::gil_scoped_release release;
    done = m.translate(sources, o);
  }
  py::list out;
  for (const translation& t : done) out.append(py::str(t.best().text));
  return out;
}

py::list hypotheses(const translation_model& m, const std::string& text, int64_t beam, int64_t n_best,
                    double length_penalty, int64_t max_length, bool alignment) {
  using namespace pybind11::literals;
  translation t;
  {
    py::gil_scoped_release release;
    t = m.translate(text, options_of(beam, n_best, length_penalty, max_length, alignment));
  }
  py::list out;
  for (const translation_hypothesis& h : t.hypotheses)
    out.append(py::dict("text"_a = h.text, "pieces"_a = h.pieces, "score"_a = h.score,
                        "log_probability"_a = h.log_probability, "ended"_a = h.ended, "alignment"_a = h.alignment));
  return out;
}

py::dict attention(const translation_model& m, const std::string& text, int64_t beam) {
  using namespace pybind11::literals;
  translation_attention a;
  {
    py::gil_scoped_release release;
    a = m.attention(text, {.beam = beam});
  }
  const auto arrays = [](const std::vector<tensor>& layers) {
    py::list out;
    for (const tensor& t : layers) out.append(to_numpy(t));
    return out;
  };
  return py::dict("source"_a = a.source, "target"_a = a.target, "read"_a = a.read, "text"_a = a.text,
                  "encoder"_a = arrays(a.encoder), "decoder"_a = arrays(a.decoder), "cross"_a = arrays(a.cross));
}

py::dict evaluate(const translation_model& m, const std::vector<std::string>& sources,
                  const std::vector<std::string>& references, int64_t beam, double length_penalty) {
  using namespace pybind11::literals;
  translation_evaluation e;
  {
    py::gil_scoped_release release;
    e = m.evaluate(sources, references, options_of(beam, 1, length_penalty, 0, false));
  }
  const translation_scores& s = e.scores;
  return py::dict("bleu"_a = s.bleu, "chrf"_a = s.chrf, "loss"_a = e.loss, "pairs"_a = e.pairs, "skipped"_a = e.skipped,
                  "precisions"_a = s.precisions, "brevity_penalty"_a = s.brevity_penalty,
                  "hypothesis_length"_a = s.hypothesis_length, "reference_length"_a = s.reference_length,
                  "bleu_signature"_a = s.bleu_signature, "chrf_signature"_a = s.chrf_signature,
                  "translations"_a = e.translations);
}

py::dict config_of(const translation_model& m) {
  using namespace pybind11::literals;
  const translation_config& c = m.config();
  return py::dict("vocabulary"_a = c.vocabulary, "width"_a = c.width, "heads"_a = c.heads,
                  "encoder_layers"_a = c.encoder_layers, "decoder_layers"_a = c.decoder_layers,
                  "feedforward"_a = c.feedforward, "max_length"_a = c.max_length);
}

}  // namespace

void bind_translation_model(py::module_& m) {
  using namespace pybind11::literals;
  py::class_<translation_model, std::shared_ptr<translation_model>>(m, "TranslationModel", class_doc)
      .def_static("load", &load, "path"_a, "Read a translation model file (attn train --task translate).")
      .def("save", [](const translation_model& self, const std::filesystem::path& path) { self.save(path.string()); },
           "path"_a, "Write the model file (replaced whole or not at all).")
      .def("translate", &translate, "text"_a, py::kw_only(), "beam"_a = 5, "length_penalty"_a = 1.0,
           "max_length"_a = 0, "The best translation of a text (or of each text of a list).")
      .def("hypotheses", &hypotheses, "text"_a, py::kw_only(), "beam"_a = 5, "n_best"_a = 1, "length_penalty"_a = 1.0,
           "max_length"_a = 0, "alignment"_a = false, "The n best hypotheses with their scores, best first.")
      .def("attention", &attention, "text"_a, py::kw_only(), "beam"_a = 5,
           "Every layer's attention while the model writes its translation.")
      .def("evaluate", &evaluate, "sources"_a, "references"_a, py::kw_only(), "beam"_a = 5, "length_penalty"_a = 1.0,
           "BLEU, chrF and loss against reference translations.")
      .def("pieces", &translation_model::pieces, "text"_a, "The text as the model's subword pieces.")
      .def_property_readonly("config", &config_of)
      .def("__repr__", [](const translation_model& self) {
        const translation_config& c = self.config();
        return "<attn.TranslationModel " + std::to_string(c.encoder_layers) + "+" + std::to_string(c.decoder_layers) +
               " layers, width " + std::to_string(c.width) + ", " + std::to_string(c.vocabulary) + " pieces>";
      });
}

}  // namespace attn::python
