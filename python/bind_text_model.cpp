// attn.TextModel: a model trained by `attn train` (attn::text_model): its contextual embeddings
// (the last attention block's output per token), predictions and evaluation; and what
// attn.embed(text, model=...) calls.
#include <fmt/format.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "arrays.hpp"
#include "attn/error.hpp"
#include "attn/inspection.hpp"
#include "attn/sentence_vector.hpp"
#include "attn/text_model.hpp"
#include "attn/training_curve.hpp"
#include "bindings.hpp"

namespace attn::python {

namespace {

constexpr const char* class_doc =
    R"doc(A text model trained by `attn train`: tokens → embeddings → multi-head self-attention →
mean pool → MLP → the next word or the label. TextModel.load(path) reads the safetensors file.

m.embed(text) -> (tokens, embeddings float32 [L, E]): the output of the model's (last)
    attention block for each token, before pooling (causal for next-word models: row t has
    seen tokens 0 … t only). m.embed(text, pool="mean", normalize=True) -> one float32 vector
    [E] for the text; hide_token=True reads a masked-word model's tokens hidden; layer=k an
    inner encoder layer's output (from 0; -1 the last).
m.predict(text, k=5) -> [(label, probability), …], best first.
m.evaluate(path) -> {"accuracy", "loss", "n", "lines", "scored"} over a file in the task's
format; every line counts (one the model cannot score is wrong; the loss is over the scored).
m.labels (the output words or labels, in class order), m.task, m.dim (E), m.heads.
Words the model has no embedding for are left out with a UserWarning; a text with none it knows
raises attn.UsageError.)doc";

std::shared_ptr<text_model> load(const std::filesystem::path& path) {
  auto m = std::make_shared<text_model>();
  py::gil_scoped_release release;
  *m = text_model::load(path.string());
  return m;
}

// The encoder layer a Python caller asks for: None, the last; from 0, or from the end as Python
// indexes (-1: the last). The library's own index (0 … layers − 1).
int64_t layer_index(const text_model& m, const std::optional<int64_t>& layer) {
  const int64_t layers = attention_layers(m.config());
  if (!layer) return layers - 1;
  if (*layer < -layers || *layer >= layers)
    throw_usage(fmt::format("layer {} is out of range: the model has {} layer{} ({} … {})", *layer, layers,
                            layers == 1 ? "" : "s", -layers, layers - 1));
  return *layer < 0 ? layers + *layer : *layer;
}

contextual_embedding embed_text(const text_model& m, const std::string& text, bool strict,
                                token_reading reading = token_reading::visible,
                                const std::optional<int64_t>& layer = std::nullopt) {
  if (reading == token_reading::hidden && !kind_of(m.config().task).hides_words)
    throw_usage(fmt::format("hide_token reads each place with its word masked: this model is {}, "
                            "not masked-word", task_name(m.config().task)));
  const int64_t at = layer_index(m, layer);
  contextual_embedding e;
  {
    py::gil_scoped_release release;
    e = m.embed(text, reading, at);
  }
  if (!e.unknown.empty()) {
    if (strict)
      throw_usage(fmt::format("unknown token '{}' (not known to the model)", e.unknown.front()));
    user_warning(
        fmt::format("left out of attention, not known to the model: {}", fmt::join(e.unknown, " ")));
  }
  return e;
}

py::list predict(const text_model& m, const std::string& text, int64_t k) {
  if (k < 1) throw_usage(fmt::format("k must be at least 1, got {}", k));
  prediction p;
  {
    py::gil_scoped_release release;
    p = m.predict(text, k);
  }
  if (!p.unknown.empty())
    user_warning(fmt::format("unknown words skipped: {}", fmt::join(p.unknown, ", ")));
  py::list out;
  for (const scored_label& s : p.top) out.append(py::make_tuple(s.label, s.probability));
  return out;
}

// inspect: every layer as a dict of numpy arrays (q, k, v, weights) and, for lm and masked-word
// models, each token's top words from that layer's output.
py::dict inspect(const text_model& m, const std::string& text, int64_t top) {
  using namespace pybind11::literals;
  if (top < 1) throw_usage(fmt::format("top must be at least 1, got {}", top));
  model_inspection x;
  {
    py::gil_scoped_release release;
    x = m.inspect(text, top);
  }
  py::list layers;
  for (const layer_inspection& l : x.layers) {
    py::list predictions;
    for (const auto& row : l.predictions) {
      py::list words;
      for (const scored_label& s : row) words.append(py::make_tuple(s.label, s.probability));
      predictions.append(words);
    }
    layers.append(py::dict("q"_a = to_numpy(l.q), "k"_a = to_numpy(l.k), "v"_a = to_numpy(l.v),
                           "weights"_a = to_numpy(l.weights), "predictions"_a = predictions));
  }
  return py::dict("tokens"_a = x.tokens, "unknown"_a = x.unknown, "causal"_a = x.causal, "scale"_a = x.scale,
                  "mask_position"_a = x.mask_position, "layers"_a = layers);
}

// TextModel.embed(texts): each text embedded on its own (as embed(text) does), the texts shared
// among the threads with the GIL released; the first failure, by index, is raised after.
py::object embed_many(const text_model& m, const std::vector<std::string>& texts, bool strict,
                      const std::optional<std::string>& pool, bool normalize, bool hide_token,
                      const std::optional<int64_t>& layer) {
  if (normalize && !pool) throw_usage("normalize scales sentence vectors: give pool='mean' (or max, cls, last)");
  const sentence_pool how = parse_sentence_pool(pool.value_or("mean"));  // checked before the work
  const token_reading reading = hide_token ? token_reading::hidden : token_reading::visible;
  if (reading == token_reading::hidden && !kind_of(m.config().task).hides_words)
    throw_usage(fmt::format("hide_token reads each place with its word masked: this model is {}, "
                            "not masked-word", task_name(m.config().task)));
  const int64_t at = layer_index(m, layer);
  const auto n = static_cast<int64_t>(texts.size());
  std::vector<contextual_embedding> out(texts.size());
  std::vector<std::string> failures(texts.size());
  {
    py::gil_scoped_release release;
#pragma omp parallel for schedule(dynamic)
    for (int64_t i = 0; i < n; ++i) {
      const auto k = static_cast<size_t>(i);
      try {
        out[k] = m.embed(texts[k], reading, at);
      } catch (const std::exception& e) {
        failures[k] = e.what();
      }
    }
  }
  std::vector<std::string> unknown;
  for (size_t i = 0; i < texts.size(); ++i) {
    if (!failures[i].empty()) throw_usage(fmt::format("texts[{}]: {}", i, failures[i]));
    if (!out[i].unknown.empty() && strict)
      throw_usage(fmt::format("texts[{}]: unknown token '{}' (not known to the model)", i, out[i].unknown.front()));
    unknown.insert(unknown.end(), out[i].unknown.begin(), out[i].unknown.end());
  }
  if (!unknown.empty())
    user_warning(fmt::format("left out of attention, not known to the model: {}", fmt::join(unknown, " ")));
  if (!pool) {
    py::list rows;
    for (const contextual_embedding& e : out) rows.append(py::make_tuple(e.tokens, to_numpy(e.embeddings)));
    return rows;
  }
  const int64_t d = m.config().dim;
  std::vector<float> all;
  all.reserve(static_cast<size_t>(n * d));
  for (const contextual_embedding& e : out) {
    const std::vector<float> v = pool_sentence(e.embeddings, how, normalize);
    all.insert(all.end(), v.begin(), v.end());
  }
  return to_numpy(tensor({n, d}, std::move(all)));
}

py::dict evaluate(const text_model& m, const std::filesystem::path& path, int64_t every, uint64_t seed) {
  evaluation e;
  {
    py::gil_scoped_release release;
    e = m.evaluate(path.string(), every, seed);
  }
  py::dict out;  // as attn eval prints it (attn::evaluation_fields)
  for (const evaluation_field& f : evaluation_fields(e, m.config().task, every, seed)) {
    if (f.integer) out[py::str(f.name)] = f.count;
    else out[py::str(f.name)] = f.value;
  }
  return out;
}

}  // namespace

py::tuple embed_with_model(const std::string& text, const py::object& model, bool strict) {
  std::shared_ptr<text_model> m;
  if (py::isinstance<text_model>(model))
    m = model.cast<std::shared_ptr<text_model>>();
  else if (py::isinstance<py::str>(model) || py::hasattr(model, "__fspath__"))
    m = load(model.cast<std::filesystem::path>());
  else
    throw py::type_error("model must be an attn.TextModel or the path of a model file");
  const contextual_embedding e = embed_text(*m, text, strict);
  // No single attention matrix to return: a model has one per head (see attn heatmap --model).
  return py::make_tuple(e.tokens, to_numpy(e.embeddings), py::none());
}

void bind_text_model(py::module_& m) {
  using namespace pybind11::literals;
  py::class_<text_model, std::shared_ptr<text_model>>(m, "TextModel", class_doc)
      .def_static("load", &load, "path"_a,
                  "Reads a model file written by attn train. Raises attn.InputError naming the "
                  "file when it is missing or not an attn text model.")
      .def(
          "embed",
          [](const text_model& self, const std::string& text, bool strict, const std::optional<std::string>& pool,
             bool normalize, bool hide_token, const std::optional<int64_t>& layer) -> py::object {
            if (normalize && !pool) throw_usage("normalize scales sentence vectors: give pool='mean' (or max, cls, last)");
            const std::optional<sentence_pool> how =
                pool ? std::optional<sentence_pool>(parse_sentence_pool(*pool)) : std::nullopt;
            const contextual_embedding e =
                embed_text(self, text, strict, hide_token ? token_reading::hidden : token_reading::visible, layer);
            if (!how) return py::make_tuple(e.tokens, to_numpy(e.embeddings));
            std::vector<float> v = pool_sentence(e.embeddings, *how, normalize);
            const auto d = static_cast<int64_t>(v.size());
            return to_numpy(tensor({d}, std::move(v)));
          },
          "text"_a, "strict"_a = false, py::kw_only(), "pool"_a = py::none(), "normalize"_a = false,
          "hide_token"_a = false, "layer"_a = py::none(),
          "(tokens, embeddings float32 [L, E]): the last attention block's output per token, "
          "each token read with itself present, before pooling. strict: raise attn.UsageError on "
          "a word the model does not know. pool='mean' (or 'max', 'cls': the first token's row, "
          "'last'): one float32 vector [E] for the text instead (sentence-transformers' "
          "convention), unit length with normalize=True. hide_token=True (masked-word models): "
          "each token read with itself replaced by the mask, what its context says belongs there. "
          "layer=k: encoder layer k's output instead of the last (from 0, or from the end as "
          "Python indexes: -1 is the last); an inner layer's is the residual stream it hands on, "
          "as Hugging Face's hidden_states[k + 1] give it.")
      .def("embed", &embed_many, "texts"_a, "strict"_a = false, py::kw_only(), "pool"_a = py::none(),
           "normalize"_a = false, "hide_token"_a = false, "layer"_a = py::none(),
           "Many texts at once (a list of str), the GIL released and the texts shared among the "
           "cores: with pool, one float32 array [N, E] (row i: texts[i]'s sentence vector); "
           "without, a list of (tokens, embeddings [L_i, E]). A text the model cannot read raises "
           "attn.UsageError naming its index.")
      .def("predict", &predict, "text"_a, "k"_a = 5,
           "The k most likely next words (or labels) as (label, probability), best first.")
      .def(
          "save",
          [](const text_model& self, const std::filesystem::path& path) {
            py::gil_scoped_release release;
            self.save(path.string());
          },
          "path"_a,
          "Writes the model file (safetensors with attn's metadata, as attn train -o writes it): "
          "beside the path under a temporary name, then moved into place.")
      .def("inspect", &inspect, "text"_a, "top"_a = 5,
           "What each layer does with the text, as the page of attn heatmap draws it: "
           "{'tokens', 'unknown', 'causal', 'scale', 'mask_position', 'layers'}; each layer a dict "
           "of float32 arrays 'q', 'k', 'v' [H, L, D] and 'weights' [H, L, L] "
           "(softmax(scale·q·kᵀ), causal for a language model) and, for lm and masked-word "
           "models, 'predictions': for each token the `top` (word, probability) pairs that layer's "
           "output points to through the model's output layer (an lm's token t: the token after "
           "it; a masked-word model's: the word at t).")
      .def("evaluate", &evaluate, "path"_a, py::kw_only(), "every"_a = 7, "seed"_a = 0,
           "Accuracy, mean cross-entropy and the number of predictions scored over a data file "
           "in the task's format: {'accuracy', 'loss', 'n', …}, as attn eval prints it. A "
           "masked-word model hides every `every`-th word of a plain text (which ones: seed): "
           "{'top1', 'top5', 'loss', 'hidden', …}.")
      .def(
          "generate",
          [](const text_model& self, const std::string& prompt, int64_t max_words, double temperature,
             int64_t top_k, double top_p, uint64_t seed, bool ignore_eos, int64_t beam, int64_t n_best,
             double length_penalty) -> py::object {
            generation_options o;
            o.ignore_eos = ignore_eos;
            o.max_words = max_words;
            o.temperature = temperature;
            o.top_k = top_k;
            o.top_p = top_p;
            o.seed = seed;
            o.beam = beam;
            o.n_best = n_best;
            o.length_penalty = length_penalty;
            generation g;
            {
              py::gil_scoped_release release;
              g = self.generate(prompt, o);
            }
            if (!g.unknown.empty())
              user_warning(fmt::format("prompt words read as <unk>: {}", fmt::join(g.unknown, ", ")));
            if (n_best == 0) return py::str(g.text);
            py::list best;
            for (const generated_text& t : g.n_best) best.append(py::make_tuple(t.text, t.score));
            return best;
          },
          "prompt"_a = "", py::kw_only(), "max_words"_a = 100, "temperature"_a = 1.0, "top_k"_a = 0,
          "top_p"_a = 1.0, "seed"_a = 0, "ignore_eos"_a = false, "beam"_a = 0, "n_best"_a = 0,
          "length_penalty"_a = 1.0,
          "A language model (task 'lm') continues the prompt: the continuation only, as readable "
          "text, without the prompt and starting with the space that joins it to the prompt, so "
          "that prompt + m.generate(prompt) is the line attn generate prints. temperature 0 is "
          "greedy (at most 100, as --temperature); the same seed "
          "gives the same words. Stops at the end of the paragraph (unless ignore_eos) or after "
          "max_words tokens. beam=N: beam search instead of sampling (temperature, top_k, top_p "
          "and seed unused), the best by log-probability / length^length_penalty "
          "(as attn generate --beam); n_best=K (≤ beam): a list of the K best (text, score) "
          "pairs instead of one text.")
      .def_property_readonly(
          "history",
          [](const text_model& self) {
            using namespace pybind11::literals;
            const training_history h = self.history();
            py::list epochs, evaluations;
            for (const train_epoch_report& r : h.epochs)
              epochs.append(py::dict("epoch"_a = r.epoch, "loss"_a = r.loss,
                                     "eval_loss"_a = score_or_none(epoch_scored(r, self.config().task), r.eval_loss),
                                     "accuracy"_a = score_or_none(epoch_scored(r, self.config().task), r.accuracy),
                                     "on_validation"_a = r.on_validation));
            for (const train_eval_report& r : h.evaluations)
              evaluations.append(py::dict("step"_a = r.step, "tokens"_a = r.tokens, "loss"_a = r.loss,
                                          "accuracy"_a = r.accuracy, "train_loss"_a = r.train_loss));
            return py::dict("epochs"_a = epochs, "evaluations"_a = evaluations);
          },
          "What the training run scored as it went, as the model file keeps it: {'epochs': [{'epoch', "
          "'loss', 'eval_loss', 'accuracy', 'on_validation'}], 'evaluations': [{'step', 'tokens', 'loss', "
          "'accuracy', 'train_loss'}]} (masked-word and lm runs: each --eval-steps and epoch end). "
          "Empty lists for files made before attn kept it.")
      .def_property_readonly("labels", &text_model::outputs,
                             "The output words (next-word) or labels (classify), in class order.")
      .def_property_readonly("task", [](const text_model& self) { return task_name(self.config().task); })
      .def_property_readonly("dim", [](const text_model& self) { return self.config().dim; },
                             "E: the width of the attention and of each embedding row.")
      .def_property_readonly("heads", [](const text_model& self) { return self.config().heads; })
      .def("__repr__", [](const text_model& self) {
        const text_model_config& c = self.config();
        return fmt::format("attn.TextModel(task='{}', labels={}, dim={}, heads={})",
                           task_name(c.task), self.outputs().size(), c.dim, c.heads);
      });
}

}  // namespace attn::python
