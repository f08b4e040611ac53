// attn.train: attn train from Python. The same options under the same names (the keywords of
// attn/train_option_table.hpp, whose rows the CLI's flags come from too), the same checks, the
// task's defaults for those not given (attn::task_defaults, as the CLI uses),
// the same model file for the same seed; progress to a callback or standard error; Ctrl-C stops
// it as it stops the CLI (the run keeps its checkpoint) and raises
// KeyboardInterrupt. TextModel.save writes a model file.
#include <fmt/format.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "attn/error.hpp"
#include "attn/file_roles.hpp"
#include "attn/text_model.hpp"
#include "attn/train.hpp"
#include "attn/train_option_table.hpp"
#include "attn/translation_model.hpp"
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

// Sets the option of `row` from a Python value, converted as its kind says.
void set_option(train_options& o, const train_option& row, const py::handle& v) {
  const std::string n = row.keyword;
  switch (row.kind) {
    case option_kind::integer: o.*std::get<int64_t train_options::*>(row.field) = as<int64_t>(n, v); return;
    case option_kind::number: o.*std::get<double train_options::*>(row.field) = as<double>(n, v); return;
    case option_kind::flag: o.*std::get<bool train_options::*>(row.field) = as<bool>(n, v); return;
    case option_kind::path:
      o.*std::get<std::string train_options::*>(row.field) = as<std::filesystem::path>(n, v).string();
      return;
    case option_kind::seed: o.*std::get<uint64_t train_options::*>(row.field) = as<uint64_t>(n, v); return;
    case option_kind::duration: o.*std::get<double train_options::*>(row.field) = seconds_of(v); return;
    case option_kind::cuts:
      o.*std::get<std::vector<int64_t> train_options::*>(row.field) = as<std::vector<int64_t>>(n, v);
      return;
    case option_kind::pool: o.*std::get<pooling train_options::*>(row.field) = parse_pooling(as<std::string>(n, v)); return;
    case option_kind::dtype: {
      const std::string dtype = as<std::string>(n, v);
      if (dtype != "float32" && dtype != "bf16") throw_usage(fmt::format("{}='{}': expected 'float32' or 'bf16'", n, dtype));
      o.*std::get<train_dtype train_options::*>(row.field) = dtype == "bf16" ? train_dtype::bf16 : train_dtype::float32;
      return;
    }
    case option_kind::device: {
      const std::string device = as<std::string>(n, v);
      if (device != "cpu" && device != "cuda") throw_usage(fmt::format("{}='{}': expected 'cpu' or 'cuda'", n, device));
      o.*std::get<train_device train_options::*>(row.field) = device == "cuda" ? train_device::cuda : train_device::cpu;
      return;
    }
  }
}

// The rows attn.train takes as keywords.
const train_option* find_keyword(const std::string& name) {
  const train_option* row = find_train_option(name);
  return row != nullptr && row->surface != option_surface::cli_only ? row : nullptr;
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

py::object train(const std::optional<std::filesystem::path>& data, const std::string& task_name,
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
  const bool pairs = kind_of(task).pairs;  // translate: a TranslationModel
  if (!data && !pairs) throw_usage("data is required");
  o.data = data ? data->string() : "";
  std::vector<std::string> given;
  for (const auto& [key, value] : options) {
    const std::string name = key.cast<std::string>();
    const train_option* row = find_keyword(name);
    if (row == nullptr) throw_usage(fmt::format("unknown option '{}' (attn.train takes train_options's names)", name));
    set_option(o, *row, value);
    given.push_back(name);
  }
  const bool lm = kind_of(task).autoregressive;  // the language model: scored by perplexity
  const bool checkpointed = find_train_option("checkpoint")->tasks.has(task);
  check_task_options(o, given, option_spelling::python);
  settle_piece_embeddings(o, !vectors_arg.is_none());
  // Checkpoints, as the CLI keeps them: beside the output unless named; none without either.
  if (checkpointed && o.checkpoint.empty() && output) o.checkpoint = output->string() + ".checkpoint";
  // The CLI's file-roles check: no output may be an input or another output, by any path.
  const bool vectors_path = !vectors_arg.is_none() && !py::isinstance<vectors>(vectors_arg);
  const std::vector<named_path> inputs{
      {"data", o.data}, {"valid", o.valid}, {"source", o.source}, {"target", o.target},
      {"valid_source", o.valid_source}, {"valid_target", o.valid_target},
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
  if (pairs) {
    if (!vectors_arg.is_none()) throw_usage("vectors is for the word models (translate learns its pieces' embeddings)");
  } else if (o.learn_embeddings > 0) {
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
           pairs ? fmt::format("epoch {}/{}  loss {:.4f}  valid perplexity {:.2f}  BLEU {:.2f} (greedy)  {:.0f} tokens/s",
                               r.epoch, r.epochs, r.loss, std::exp(r.eval_loss), 100 * r.accuracy, r.tokens_per_second)
                 : fmt::format("epoch {}/{}  loss {:.4f}  {} {:.4f}  {:.0f} tokens/s", r.epoch, r.epochs, r.loss,
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
  std::optional<translation_training> translated;
  {
    py::gil_scoped_release release;
    if (pairs) {
      translated = train_translation_model(o, cb);
      result = std::move(translated->run);
    } else {
      result = train_text_model(o, cb);
    }
  }
  if (failure) {
    if (!result.checkpoint.empty() && failure->matches(PyExc_KeyboardInterrupt))
      print_line(fmt::format("interrupted: the training state is in {}; attn.train(..., resume=True) goes on from there",
                             result.checkpoint));
    throw std::move(*failure);
  }
  if (pairs) {
    auto model = std::make_shared<translation_model>(std::move(translated->model));
    if (output) model->save(output->string());
    if (output && checkpointed && result.checkpoint_written && !o.checkpoint.empty())
      remove_training_checkpoint(o.checkpoint, result.checkpoint_run);
    return py::cast(model);
  }
  auto model = std::make_shared<text_model>(std::move(result.model));
  if (output) {
    model->save(output->string());
    // The run is complete: a checkpoint it wrote has nothing left to resume.
    if (checkpointed && result.checkpoint_written && !o.checkpoint.empty())
      remove_training_checkpoint(o.checkpoint, result.checkpoint_run);
  }
  return py::cast(model);
}

// attn.train's docstring: its keywords come from the table, those every task takes first, then
// each other set of tasks'.
std::string train_doc() {
  std::vector<task_set> groups{every_task};
  for (const train_option& row : train_option_table())
    if (std::find(groups.begin(), groups.end(), row.tasks) == groups.end()) groups.push_back(row.tasks);
  std::vector<std::string> parts;
  for (const task_set& group : groups) {
    std::vector<std::string> keywords;
    for (const train_option& row : train_option_table())
      if (row.tasks == group && row.surface != option_surface::cli_only) keywords.emplace_back(row.keyword);
    parts.push_back(group == every_task ? fmt::format("{}", fmt::join(keywords, ", "))
                                        : fmt::format("for {}: {}", name_tasks(group, option_spelling::python),
                                                      fmt::join(keywords, ", ")));
  }
  return fmt::format(R"doc(attn train from Python: trains a text model on `data` and returns it (a TextModel).

task: 'next-word', 'classify', 'masked-word', 'lm' or 'translate' (pairs as source= and target= files,
or data of source<TAB>target lines; returns an attn.TranslationModel). output: also save the model file there
(and keep a checkpoint at OUTPUT.checkpoint while training). vectors:
None (the embedded GloVe), a path, or an attn.Vectors. Every other option of attn train, under
train_options's names: {}. time is '30m' or seconds; threads is --threads, for this run;
save_steps writes every N steps the model so far beside output, as OUTPUT.stepN.safetensors;
adaptive_softmax is a list of cuts, e.g. [2000, 6000]. An option not given takes the task's
default, as on the command line, so the same options and seed give the file attn train writes;
an option the task does not take is a UsageError naming the tasks that take it. callback(event):
called with a dict for every step ({{'kind': 'step', 'loss', 'lr', 'tokens_per_second',
'eta_seconds', ...}}), epoch ('epoch': 'loss', 'accuracy', 'eval_loss', ...), held-out score
('eval') and snapshot ('snapshot': 'step', 'path'); without one, progress=True prints a line
per epoch and score to standard error. Ctrl-C (KeyboardInterrupt) stops the run after its step;
a run keeps its checkpoint for resume=True. Errors: the CLI's, as
attn.UsageError and attn.InputError: the CLI's option ranges and its file-roles check (no output
or checkpoint may be data, valid, vectors or each other, by any path or link) run before any
work. An epoch event of a masked-word or lm run without held-out text has eval_loss and accuracy
None. The GIL is released while it trains.)doc",
                     fmt::join(parts, "; "));
}

// The table as attn.train reads it, for the tests that hold attn train and attn.train to it:
// each row's keyword, flag, kind, tasks, where it is spelled, and its default for each task (numbers
// and flags only; None for the others).
py::list train_option_rows() {
  using namespace pybind11::literals;
  py::list rows;
  for (const train_option& row : train_option_table()) {
    py::list tasks;
    py::dict defaults;
    for (text_task t : row.tasks.tasks()) tasks.append(task_name(t));
    const bool numeric = row.kind == option_kind::integer || row.kind == option_kind::number ||
                         row.kind == option_kind::flag || row.kind == option_kind::seed;
    for (text_task t : every_task.tasks())
      defaults[py::str(task_name(t))] = numeric ? py::object(py::float_(option_default(row, t))) : py::object(py::none());
    const char* surface = row.surface == option_surface::both ? "both" : row.surface == option_surface::cli_only ? "cli" : "python";
    static const char* const kinds[] = {"integer", "number", "flag", "path", "seed", "duration", "cuts", "pool", "dtype", "device"};
    rows.append(py::dict("keyword"_a = row.keyword, "flag"_a = row.flag, "kind"_a = kinds[static_cast<int>(row.kind)],
                         "tasks"_a = tasks, "surface"_a = surface, "defaults"_a = defaults));
  }
  return rows;
}

}  // namespace

void bind_train(py::module_& m) {
  using namespace pybind11::literals;
  static const std::string doc = train_doc();
  m.def("train", &train, "data"_a = py::none(), py::kw_only(), "task"_a = "next-word", "output"_a = py::none(),
        "vectors"_a = py::none(), "callback"_a = py::none(), "progress"_a = true, doc.c_str());
  m.def("_train_options", &train_option_rows, "attn train's and attn.train's options, as the table holds them.");
}

}  // namespace attn::python
