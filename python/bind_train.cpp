// attn.train: attn train from Python. The same options under the same names (as train_options
// spells them), the task's defaults for those not given (attn::task_defaults, as the CLI uses),
// the same model file for the same seed; progress to a callback or standard error; Ctrl-C stops
// it as it stops the CLI (the run keeps its checkpoint) and raises
// KeyboardInterrupt. TextModel.save writes a model file.
#include <fmt/format.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "attn/error.hpp"
#include "attn/file_roles.hpp"
#include "attn/text_model.hpp"
#include "attn/train.hpp"
#include "attn/vectors.hpp"
#include "bindings.hpp"

namespace attn::python {

namespace {

template <class T>
T as(const std::string& name, const py::handle& value) {
  try {
    // True is an int to Python, but vocab=True is a slip, as `--vocab true` is on the command line.
    if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>)
      if (py::isinstance<py::bool_>(value)) throw py::cast_error();
    return value.cast<T>();
  } catch (const py::cast_error&) {
    throw_usage(fmt::format("option {} takes {}, got {}", name,
                            std::is_same_v<T, bool> ? "True or False"
                            : std::is_same_v<T, std::vector<int64_t>> ? "a list of integers"
                            : std::is_integral_v<T> ? "an integer"
                            : std::is_floating_point_v<T> ? "a number" : "a string",
                            py::str(py::repr(value)).cast<std::string>()));
  }
}

// A number of seconds, or a duration as attn train --time takes it ("90s", "30m", "1h30m").
// A number is read as seconds by the same parser, so time=0 is refused as --time 0 is.
double seconds_of(const py::handle& value) {
  if (!py::isinstance<py::bool_>(value) && (py::isinstance<py::float_>(value) || py::isinstance<py::int_>(value)))
    return parse_duration(fmt::format("{}s", value.cast<double>()), "time");
  return parse_duration(as<std::string>("time", value), "time");
}

// Every option attn.train takes beside data, task and output, by train_options's names.
using setter = std::function<void(train_options&, const std::string&, const py::handle&)>;
const std::map<std::string, setter>& setters() {
  static const std::map<std::string, setter> table = {
      {"valid", [](train_options& o, const std::string& n, const py::handle& v) { o.valid = as<std::filesystem::path>(n, v).string(); }},
      {"learn_embeddings", [](train_options& o, const std::string& n, const py::handle& v) { o.learn_embeddings = as<int64_t>(n, v); }},
      {"finetune_embeddings", [](train_options& o, const std::string& n, const py::handle& v) { o.finetune_embeddings = as<bool>(n, v); }},
      {"min_count", [](train_options& o, const std::string& n, const py::handle& v) { o.min_count = as<int64_t>(n, v); }},
      {"positions", [](train_options& o, const std::string& n, const py::handle& v) { o.positions = as<bool>(n, v); }},
      {"heads", [](train_options& o, const std::string& n, const py::handle& v) { o.heads = as<int64_t>(n, v); }},
      {"dim", [](train_options& o, const std::string& n, const py::handle& v) { o.dim = as<int64_t>(n, v); }},
      {"layers", [](train_options& o, const std::string& n, const py::handle& v) { o.layers = as<int64_t>(n, v); }},
      {"feedforward", [](train_options& o, const std::string& n, const py::handle& v) { o.feedforward = as<int64_t>(n, v); }},
      {"norm_first", [](train_options& o, const std::string& n, const py::handle& v) { o.norm_first = as<bool>(n, v); }},
      {"adaptive_softmax", [](train_options& o, const std::string& n, const py::handle& v) { o.adaptive_softmax = as<std::vector<int64_t>>(n, v); }},
      {"pool", [](train_options& o, const std::string& n, const py::handle& v) { o.pool = parse_pooling(as<std::string>(n, v)); }},
      {"hidden", [](train_options& o, const std::string& n, const py::handle& v) { o.hidden = as<int64_t>(n, v); }},
      {"dropout", [](train_options& o, const std::string& n, const py::handle& v) { o.dropout = as<double>(n, v); }},
      {"window", [](train_options& o, const std::string& n, const py::handle& v) { o.window = as<int64_t>(n, v); }},
      {"shards", [](train_options& o, const std::string& n, const py::handle& v) { o.shards = as<int64_t>(n, v); }},
      {"epochs", [](train_options& o, const std::string& n, const py::handle& v) { o.epochs = as<int64_t>(n, v); }},
      {"patience", [](train_options& o, const std::string& n, const py::handle& v) { o.patience = as<int64_t>(n, v); }},
      {"lr", [](train_options& o, const std::string& n, const py::handle& v) { o.lr = as<double>(n, v); }},
      {"batch", [](train_options& o, const std::string& n, const py::handle& v) { o.batch = as<int64_t>(n, v); }},
      {"seed", [](train_options& o, const std::string& n, const py::handle& v) { o.seed = as<uint64_t>(n, v); }},
      {"weight_decay", [](train_options& o, const std::string& n, const py::handle& v) { o.weight_decay = as<double>(n, v); }},
      {"clip", [](train_options& o, const std::string& n, const py::handle& v) { o.clip = as<double>(n, v); }},
      {"warmup", [](train_options& o, const std::string& n, const py::handle& v) { o.warmup = as<double>(n, v); }},
      {"mask_share", [](train_options& o, const std::string& n, const py::handle& v) { o.mask_share = as<double>(n, v); }},
      {"max_length", [](train_options& o, const std::string& n, const py::handle& v) { o.max_length = as<int64_t>(n, v); }},
      {"group_by_length", [](train_options& o, const std::string& n, const py::handle& v) { o.group_by_length = as<bool>(n, v); }},
      {"pack_sentences", [](train_options& o, const std::string& n, const py::handle& v) { o.pack_sentences = as<bool>(n, v); }},
      {"drop_final_stop", [](train_options& o, const std::string& n, const py::handle& v) { o.drop_final_stop = as<double>(n, v); }},
      {"max_outputs", [](train_options& o, const std::string& n, const py::handle& v) { o.max_outputs = as<int64_t>(n, v); }},
      {"checkpoint", [](train_options& o, const std::string& n, const py::handle& v) { o.checkpoint = as<std::filesystem::path>(n, v).string(); }},
      {"checkpoint_steps", [](train_options& o, const std::string& n, const py::handle& v) { o.checkpoint_steps = as<int64_t>(n, v); }},
      {"resume", [](train_options& o, const std::string& n, const py::handle& v) { o.resume = as<bool>(n, v); }},
      {"vocab", [](train_options& o, const std::string& n, const py::handle& v) { o.vocab = as<int64_t>(n, v); }},
      {"context", [](train_options& o, const std::string& n, const py::handle& v) { o.context = as<int64_t>(n, v); }},
      {"max_tokens", [](train_options& o, const std::string& n, const py::handle& v) { o.max_tokens = as<int64_t>(n, v); }},
      {"time", [](train_options& o, const std::string&, const py::handle& v) { o.time_limit = seconds_of(v); }},
      {"threads", [](train_options& o, const std::string& n, const py::handle& v) { o.threads = as<int64_t>(n, v); }},
      {"eval_steps", [](train_options& o, const std::string& n, const py::handle& v) { o.eval_steps = as<int64_t>(n, v); }},
      {"save_steps", [](train_options& o, const std::string& n, const py::handle& v) { o.save_steps = as<int64_t>(n, v); }},
      {"dtype", [](train_options& o, const std::string& n, const py::handle& v) {
         const std::string dtype = as<std::string>(n, v);
         if (dtype != "float32" && dtype != "bf16")
           throw_usage(fmt::format("{}='{}': expected 'float32' or 'bf16'", n, dtype));
         o.dtype = dtype == "bf16" ? train_dtype::bf16 : train_dtype::float32;
       }},
  };
  return table;
}

py::dict step_event(const train_step_report& r) {
  using namespace pybind11::literals;
  return py::dict("kind"_a = "step", "epoch"_a = r.epoch, "epochs"_a = r.epochs, "step"_a = r.step,
                  "steps"_a = r.steps, "loss"_a = r.loss, "lr"_a = r.lr, "tokens_per_second"_a = r.tokens_per_second,
                  "eta_seconds"_a = r.eta_seconds, "mfu"_a = r.mfu);
}

py::dict epoch_event(const train_epoch_report& r, text_task task) {
  using namespace pybind11::literals;
  const bool scored = epoch_scored(r, task);
  return py::dict("kind"_a = "epoch", "epoch"_a = r.epoch, "epochs"_a = r.epochs, "loss"_a = r.loss,
                  "accuracy"_a = score_or_none(scored, r.accuracy), "eval_loss"_a = score_or_none(scored, r.eval_loss),
                  "on_validation"_a = r.on_validation,
                  "best"_a = r.best, "seconds"_a = r.seconds, "tokens_per_second"_a = r.tokens_per_second);
}

py::dict snapshot_event(int64_t step, const std::string& path) {
  using namespace pybind11::literals;
  return py::dict("kind"_a = "snapshot", "step"_a = step, "path"_a = path);
}

py::dict eval_event(const train_eval_report& r) {
  using namespace pybind11::literals;
  return py::dict("kind"_a = "eval", "step"_a = r.step, "steps"_a = r.steps, "tokens"_a = r.tokens,
                  "loss"_a = r.loss, "accuracy"_a = r.accuracy, "train_loss"_a = r.train_loss);
}

// The CLI's lines for an epoch and a held-out score, without its terminal bar.
void print_line(const std::string& line) {
  py::module_::import("sys").attr("stderr").attr("write")(line + "\n");
}

std::shared_ptr<text_model> train(const std::filesystem::path& data, const std::string& task_name,
                                  const std::optional<std::filesystem::path>& output, const py::object& vectors_arg,
                                  const py::object& callback, bool progress, const py::kwargs& options) {
  const text_task task = parse_task(task_name, "task");
  // Where the model goes must exist before an hour of training, not after.
  if (output) {
    const std::filesystem::path folder = output->parent_path().empty() ? "." : output->parent_path();
    if (!std::filesystem::is_directory(folder))
      throw_input(output->string(), fmt::format("no folder {} to write the model into", folder.string()));
  }
  train_options o = task_defaults(task);
  o.data = data.string();
  for (const auto& [key, value] : options) {
    const std::string name = key.cast<std::string>();
    const auto it = setters().find(name);
    if (it == setters().end()) throw_usage(fmt::format("unknown option '{}' (attn.train takes train_options's names)", name));
    it->second(o, name, value);
  }
  const bool lm = task == text_task::lm;
  check_task_options(o, option_spelling::python);
  // Checkpoints, as the CLI keeps them: beside the output unless named; none without either.
  if (o.checkpoint.empty() && output) o.checkpoint = output->string() + ".checkpoint";
  // The CLI's file-roles check: no output may be an input or another output, by any path.
  const bool vectors_path = !vectors_arg.is_none() && !py::isinstance<vectors>(vectors_arg);
  const std::vector<named_path> inputs{
      {"data", o.data}, {"valid", o.valid},
      {"vectors", vectors_path ? as<std::filesystem::path>("vectors", vectors_arg).string() : ""}};
  std::vector<named_path> outputs{{"output", output ? output->string() : ""}, {"checkpoint", o.checkpoint}};
  // Files already named like a snapshot are outputs too, as the CLI's --save-steps declares them.
  if (o.save_steps > 0 && output)
    for (const std::string& path : existing_snapshots(output->string())) outputs.push_back({"save_steps", path});
  check_file_roles(inputs, outputs);
  // Snapshots go beside the output, as the CLI's --save-steps files do.
  if (o.save_steps > 0 && !output) throw_usage("save_steps writes the model beside output: give output too");
  if (o.resume && (o.checkpoint.empty() || !std::filesystem::exists(o.checkpoint)))
    throw_input(o.checkpoint.empty() ? "checkpoint" : o.checkpoint, "no checkpoint to resume from");

  // The word vectors: the embedded default, a file, or an attn.Vectors already loaded.
  std::shared_ptr<vectors> word_vectors;
  if (o.learn_embeddings > 0) {
    if (!vectors_arg.is_none()) throw_usage("vectors and learn_embeddings exclude each other");
  } else if (vectors_arg.is_none()) {
    word_vectors = std::make_shared<vectors>(vectors::load_default());
  } else if (py::isinstance<vectors>(vectors_arg)) {
    word_vectors = vectors_arg.cast<std::shared_ptr<vectors>>();
  } else {
    const std::string path = as<std::filesystem::path>("vectors", vectors_arg).string();
    py::gil_scoped_release release;
    word_vectors = std::make_shared<vectors>(vectors::load(path));
  }
  o.word_vectors = word_vectors.get();

  // Progress and Ctrl-C: each report takes the GIL for the callback and for a look at pending
  // signals; a KeyboardInterrupt stops the run after its step, as Ctrl-C stops attn train.
  std::atomic<bool> stop{false};
  std::optional<py::error_already_set> failure;
  const auto report = [&](const std::function<py::dict()>& event, const std::string& line) {
    py::gil_scoped_acquire acquire;
    if (failure) return;
    try {
      if (PyErr_CheckSignals() != 0) throw py::error_already_set();
      if (!callback.is_none()) callback(event());
      else if (progress && !line.empty()) print_line(line);
    } catch (py::error_already_set& e) {
      failure.emplace(std::move(e));
      stop.store(true);
    }
  };
  train_callbacks cb;
  cb.stop = &stop;
  cb.on_step = [&](const train_step_report& r) { report([&] { return step_event(r); }, ""); };
  cb.on_epoch = [&](const train_epoch_report& r) {
    report([&] { return epoch_event(r, task); },
           fmt::format("epoch {}/{}  loss {:.4f}  {} {:.4f}  {:.0f} tokens/s", r.epoch, r.epochs, r.loss,
                       lm ? "valid perplexity" : r.on_validation ? "valid accuracy" : "train accuracy",
                       lm ? std::exp(r.eval_loss) : r.accuracy, r.tokens_per_second));
  };
  cb.on_eval = [&](const train_eval_report& r) {
    report([&] { return eval_event(r); },
           fmt::format("step {}/{}  {} tokens  valid loss {:.4f}  accuracy {:.4f}", r.step, r.steps, r.tokens, r.loss,
                       r.accuracy));
  };
  cb.on_snapshot = [&](int64_t step, const std::string& model_file) {
    // Checked again as it is written: a file that became an input's name meanwhile is refused.
    check_file_roles(inputs, {{"save_steps", snapshot_path(output->string(), step)}});
    const std::string path = save_snapshot(output->string(), step, model_file);
    report([&] { return snapshot_event(step, path); }, fmt::format("saved {}: the model at step {}", path, step));
  };
  train_result result;
  {
    py::gil_scoped_release release;
    result = train_text_model(o, cb);
  }
  if (failure) {
    if (!result.checkpoint.empty() && failure->matches(PyExc_KeyboardInterrupt))
      print_line(fmt::format("interrupted: the training state is in {}; attn.train(..., resume=True) goes on from there",
                             result.checkpoint));
    throw std::move(*failure);
  }
  auto model = std::make_shared<text_model>(std::move(result.model));
  if (output) {
    model->save(output->string());
    // The run is complete: a checkpoint it wrote has nothing left to resume.
    if (result.checkpoint_written && !o.checkpoint.empty())
      remove_training_checkpoint(o.checkpoint, result.checkpoint_run);
  }
  return model;
}

}  // namespace

void bind_train(py::module_& m) {
  using namespace pybind11::literals;
  m.def("train", &train, "data"_a, py::kw_only(), "task"_a = "next-word", "output"_a = py::none(),
        "vectors"_a = py::none(), "callback"_a = py::none(), "progress"_a = true,
        R"doc(attn train from Python: trains a text model on `data` and returns it (a TextModel).

task: 'next-word', 'classify', 'masked-word' or 'lm'. output: also save the model file there
(and keep a checkpoint at OUTPUT.checkpoint while training). vectors:
None (the embedded GloVe), a path, or an attn.Vectors. Every other option of attn train, under
train_options's names: valid, learn_embeddings, finetune_embeddings, min_count, positions,
heads, dim, layers, feedforward, norm_first, pool, hidden, dropout, window, shards, epochs,
patience, lr, batch, seed, weight_decay, clip, warmup, mask_share, max_length, max_outputs, group_by_length, pack_sentences,
drop_final_stop, checkpoint, checkpoint_steps, resume, vocab, context, max_tokens, time ('30m' or seconds),
eval_steps, threads (as --threads, for this run), save_steps (every N steps also the model so far beside output, as
OUTPUT.stepN.safetensors), adaptive_softmax (a list of cuts, e.g. [2000, 6000]); an option not given takes the task's default, as on the command line, so the same
options and seed give the file attn train writes. callback(event): called with a dict for every
step ({'kind': 'step', 'loss', 'lr', 'tokens_per_second', 'eta_seconds', ...}), epoch ('epoch':
'loss', 'accuracy', 'eval_loss', ...), held-out score ('eval') and snapshot ('snapshot': 'step',
'path'); without one, progress=True
prints a line per epoch and score to standard error. Ctrl-C (KeyboardInterrupt) stops the run
after its step; a run keeps its checkpoint for resume=True. Errors: the CLI's,
as attn.UsageError and attn.InputError: the CLI's option ranges and its file-roles check (no
output or checkpoint may be data, valid, vectors or each other, by any path or link) run before
any work. An epoch event of a masked-word or lm run without held-out text has eval_loss and
accuracy None. The GIL is released while it trains.)doc");
}

}  // namespace attn::python
