#include "train/loop_checkpoint.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <random>

#include "attn/error.hpp"
#include "io/content_hash.hpp"
#include "train/trainer_parts.hpp"
#include "train/training_history.hpp"

namespace attn::train {

namespace {

using header_reader = io::json_fields;

nlohmann::json to_json(const progress& p) {
  return {{"epoch", p.epoch}, {"chunk", p.part}, {"batch", p.batch}, {"done", p.done},
          {"all_tokens", p.all_tokens}, {"loss_sum", p.loss_sum}, {"rows_sum", p.rows_sum},
          {"epoch_tokens", p.epoch_tokens}, {"best_epoch", p.best_epoch}, {"best_accuracy", p.best.accuracy},
          {"best_loss", p.best.loss}, {"best_n", p.best.n}, {"best_saved", p.best_saved},
          {"seconds", p.seconds}, {"window_loss_sum", p.window_loss_sum}, {"window_rows", p.window_rows}};
}

// Every field by name, of the right type, finite (io/json_fields.hpp), so a damaged or edited
// file is an input error naming the field, never an out-of-range read or a silently wrong model.
progress from_json(const nlohmann::json& j, const header_reader& h) {
  progress p;
  p.epoch = h.integer(j, "progress.epoch");
  p.part = h.integer(j, "progress.chunk");
  p.batch = h.integer(j, "progress.batch");
  p.done = h.integer(j, "progress.done");
  p.all_tokens = h.integer(j, "progress.all_tokens");
  p.loss_sum = h.number(j, "progress.loss_sum");
  p.rows_sum = h.integer(j, "progress.rows_sum");
  p.epoch_tokens = h.integer(j, "progress.epoch_tokens");
  p.best_epoch = h.integer(j, "progress.best_epoch");
  p.best = {.loss = h.number(j, "progress.best_loss"), .accuracy = h.number(j, "progress.best_accuracy"),
            .n = h.integer(j, "progress.best_n")};
  p.best_saved = h.boolean(j, "progress.best_saved");
  p.seconds = h.has(j, "seconds") ? h.number(j, "progress.seconds") : 0.0;  // absent before lm
  if (h.has(j, "window_rows")) {  // absent before the history was kept
    p.window_loss_sum = h.number(j, "progress.window_loss_sum");
    p.window_rows = h.integer(j, "progress.window_rows");
  }
  return p;
}

// Within the run it resumes.
void check_progress(const progress& p, const run_shape& r, const header_reader& h) {
  const auto f = [](int64_t v) { return static_cast<double>(v); };
  const auto parts = static_cast<int64_t>(r.part_steps.size());
  h.range("progress.epoch", f(p.epoch), 1, f(r.epochs));
  h.range("progress.chunk", f(p.part), 0, f(std::max<int64_t>(parts - 1, 0)));
  const auto part = static_cast<size_t>(p.part);
  h.range("progress.batch", f(p.batch), 0, f(r.part_steps[part]));
  h.range("progress.seconds", p.seconds, 0, 1e12);
  // Every step counts, so where the run is fixes how many steps it took.
  int64_t expected = (p.epoch - 1) * r.steps + p.batch;
  for (size_t k = 0; k < part; ++k) expected += r.part_steps[k];
  h.range("progress.done", f(p.done), f(expected), f(expected));
  h.range("progress.all_tokens", f(p.all_tokens), 0, 9e18);
  h.range("progress.epoch_tokens", f(p.epoch_tokens), 0, f(p.all_tokens));
  h.range("progress.rows_sum", f(p.rows_sum), 0, f(p.epoch_tokens));
  h.range("progress.loss_sum", p.loss_sum, 0, 1e300);
  h.range("progress.window_loss_sum", p.window_loss_sum, 0, 1e300);
  h.range("progress.window_rows", f(p.window_rows), 0, 9e18);
  h.range("progress.best_epoch", f(p.best_epoch), 0, f(p.epoch - 1));
  h.range("progress.best_accuracy", p.best.accuracy, -1, 1);
  h.range("progress.best_loss", p.best.loss, 0, 1e300);
  h.range("progress.best_n", f(p.best.n), 0, f(r.sequences) * 1e6);
  if (p.best_saved && p.best_epoch < 1)
    h.fail("progress.best_saved", "is set with no best epoch");
}

nlohmann::json epoch_json(const train_epoch_report& r) {
  return {{"epoch", r.epoch}, {"loss", r.loss}, {"accuracy", r.accuracy}, {"eval_loss", r.eval_loss},
          {"n", r.n}, {"best", r.best}, {"seconds", r.seconds}, {"tokens_per_second", r.tokens_per_second}};
}

train_epoch_report epoch_from_json(const nlohmann::json& j, int64_t epochs, bool validating,
                                   const header_reader& h) {
  train_epoch_report r;
  r.epoch = h.integer(j, "epochs[].epoch");
  r.epochs = epochs;
  r.loss = h.number(j, "epochs[].loss");
  r.accuracy = h.number(j, "epochs[].accuracy");
  r.eval_loss = h.number(j, "epochs[].eval_loss");
  r.n = h.integer(j, "epochs[].n");
  r.best = h.boolean(j, "epochs[].best");
  r.seconds = h.number(j, "epochs[].seconds");
  r.tokens_per_second = h.number(j, "epochs[].tokens_per_second");
  r.on_validation = validating;
  return r;
}


}  // namespace

// (Paths would tie a checkpoint to where the files lie: the same text under another name resumes
// and other text under the same name is refused.)
std::string content_record(const std::string& record, const train_options& o) {
  nlohmann::json j = nlohmann::json::parse(record);
  const auto digest = [](const std::string& path) {
    const io::file_digest d = io::digest_file(path);
    if (!d.readable) throw_input(path, d.problem);
    return d.describe();
  };
  j["data"] = digest(o.data);
  if (!o.valid.empty()) j["valid"] = digest(o.valid);
  if (o.word_vectors != nullptr && !uses_default_vectors(o) && std::filesystem::is_regular_file(o.word_vectors->source()))
    j["vectors"] = digest(o.word_vectors->source());
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string run_fingerprint(const text_model_config& c, const text_model::impl& model, const train_options& o) {
  nlohmann::json fields = nlohmann::json{
      {"training", content_record(model.training, o)}, {"layers", c.layers}, {"heads", c.heads}, {"dim", c.dim},
      {"feedforward", c.feedforward}, {"positions", c.max_positions}, {"new_words", c.new_words},
      {"inputs", model.inputs.size()}, {"outputs", model.outputs.size()}};
  if (c.norm_first) fields["norm_first"] = true;  // absent before pre-norm existed
  if (!c.output_cutoffs.empty()) fields["adaptive_cutoffs"] = c.output_cutoffs;
  return fields.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string new_run_id() {
  std::random_device device;
  return fmt::format("{:08x}{:08x}", device(), device());
}

std::string checkpoint_format(text_task task) { return kind_of(task).checkpoint_format; }

void save_checkpoint(const checkpoint_identity& id, const progress& p, const source_place& place,
                     const std::vector<train_epoch_report>& epochs,
                     const std::vector<train_eval_report>& evaluations,
                     const std::vector<nn::parameter<float>*>& params, const adamw& optimiser,
                     const std::vector<std::vector<float>>& best_weights) {
  checkpoint c;
  nlohmann::json where = to_json(p);
  place.save(where, c);
  c.header = {{"format", id.format}, {"options", id.fingerprint}, {"run", id.run}, {"progress", where}};
  nlohmann::json reports = nlohmann::json::array();
  for (const train_epoch_report& r : epochs) reports.push_back(epoch_json(r));
  c.header["epochs"] = reports;
  nlohmann::json scored = nlohmann::json::array();
  for (const train_eval_report& r : evaluations) scored.push_back(evaluation_json(r));
  c.header["evaluations"] = scored;
  for (const nn::parameter<float>* q : params)
    if (q->trainable) c.put("value." + q->name, q->value);
  const adamw::state s = optimiser.save();
  for (size_t i = 0, k = 0; i < params.size(); ++i) {
    if (!params[i]->trainable) continue;
    c.put("m." + params[i]->name, s.m[k]);
    c.put("v." + params[i]->name, s.v[k]);
    c.put("done." + params[i]->name, s.done[k]);
    if (p.best_saved) c.put("best." + params[i]->name, best_weights[i]);
    ++k;
  }
  c.put("lrs", s.lrs);
  c.put("replay_steps", s.replay_steps);
  c.put("step_sizes", s.step_sizes);
  c.put("inv_c2s", s.inv_c2s);
  c.put("t", std::vector<int64_t>{s.t});
  c.save(id.path);
}

progress load_checkpoint(checkpoint_identity& id, text_task task, source_place& place,
                         std::vector<train_epoch_report>& epochs, std::vector<train_eval_report>& evaluations,
                         const run_shape& run, bool validating,
                         const std::vector<nn::parameter<float>*>& params, adamw& optimiser,
                         std::vector<std::vector<float>>& best_weights) {
  const checkpoint c = checkpoint::load(id.path);
  const header_reader h(id.path, "checkpoint field");
  if (h.text(c.header, "format") != id.format)
    throw_input(id.path, fmt::format("not {} training checkpoint", kind_of(task).training));
  if (h.text(c.header, "options") != id.fingerprint)
    throw_input(id.path, "the checkpoint was made with other data or options (resume with the same command)");
  id.run = h.text(c.header, "run");  // the run goes on: its checkpoint stays its own
  const nlohmann::json& where = h.at(c.header, "progress");
  const progress p = from_json(where, h);
  check_progress(p, run, h);
  place.load(where, h, c);
  const nlohmann::json& reports = h.at(c.header, "epochs");
  if (!reports.is_array() || static_cast<int64_t>(reports.size()) != p.epoch - 1)
    throw_input(id.path, fmt::format("checkpoint field 'epochs' must list the {} finished epochs", p.epoch - 1));
  for (const auto& r : reports) {
    epochs.push_back(epoch_from_json(r, run.epochs, validating, h));
    h.range("epochs[].epoch", static_cast<double>(epochs.back().epoch),
            static_cast<double>(epochs.size()), static_cast<double>(epochs.size()));
  }
  if (h.has(c.header, "evaluations")) {  // absent before the history was kept
    const nlohmann::json& scored = h.at(c.header, "evaluations");
    if (!scored.is_array()) h.fail("evaluations", "must be a list");
    for (const auto& r : scored) {
      evaluations.push_back(evaluation_from_json(r, h));
      h.range("evaluations[].step", static_cast<double>(evaluations.back().step), 1, static_cast<double>(p.done));
    }
  }
  adamw::state s;
  const std::vector<double> t = c.doubles("lrs");
  s.lrs = t;
  s.replay_steps = c.doubles("replay_steps");
  s.step_sizes = c.floats("step_sizes", t.size());
  s.inv_c2s = c.floats("inv_c2s", t.size());
  s.t = c.integers("t", 1)[0];
  if (s.replay_steps.size() != t.size() || s.t + 1 != static_cast<int64_t>(t.size()) || s.t != p.done)
    throw_input(id.path, "inconsistent checkpoint (optimiser steps)");
  if (p.best_saved) best_weights.assign(params.size(), {});
  for (size_t i = 0; i < params.size(); ++i) {
    nn::parameter<float>& q = *params[i];
    if (!q.trainable) continue;
    q.value = c.floats("value." + q.name, q.value.size());
    s.m.push_back(c.floats("m." + q.name, q.value.size()));
    s.v.push_back(c.floats("v." + q.name, q.value.size()));
    const size_t rows = q.sparse() ? q.value.size() / static_cast<size_t>(q.row_width) : 0;
    s.done.push_back(c.integers("done." + q.name, rows));
    if (p.best_saved) best_weights[i] = c.floats("best." + q.name, q.value.size());
  }
  optimiser.load(std::move(s));
  return p;
}

}  // namespace attn::train
