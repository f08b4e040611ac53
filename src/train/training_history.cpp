#include "train/training_history.hpp"

#include <nlohmann/json.hpp>

namespace attn::train {

nlohmann::json evaluation_json(const train_eval_report& r) {
  return {{"step", r.step}, {"tokens", r.tokens}, {"loss", r.loss}, {"accuracy", r.accuracy},
          {"train_loss", r.train_loss}};
}

train_eval_report evaluation_from_json(const nlohmann::json& j, const io::json_fields& h) {
  train_eval_report r;
  r.step = h.integer(j, "evaluations[].step");
  r.tokens = h.integer(j, "evaluations[].tokens");
  r.loss = h.number(j, "evaluations[].loss");
  r.accuracy = h.number(j, "evaluations[].accuracy");
  r.train_loss = h.number(j, "evaluations[].train_loss");
  h.range("evaluations[].step", static_cast<double>(r.step), 1, 1e18);
  h.range("evaluations[].tokens", static_cast<double>(r.tokens), 0, 1e18);
  h.range("evaluations[].accuracy", r.accuracy, 0, 1);
  return r;
}

std::string history_json(const training_history& history) {
  nlohmann::json epochs = nlohmann::json::array(), evaluations = nlohmann::json::array();
  for (const train_epoch_report& r : history.epochs)
    epochs.push_back({{"epoch", r.epoch}, {"loss", r.loss}, {"accuracy", r.accuracy}, {"eval_loss", r.eval_loss},
                      {"on_validation", r.on_validation}, {"best", r.best}});
  for (const train_eval_report& r : history.evaluations) evaluations.push_back(evaluation_json(r));
  return nlohmann::json{{"epochs", epochs}, {"evaluations", evaluations}}.dump(
      -1, ' ', false, nlohmann::json::error_handler_t::replace);
}

training_history parse_history(const std::string& text, const io::json_fields& h) {
  const nlohmann::json j = h.parse(text, "history");
  training_history out;
  const nlohmann::json& epochs = h.at(j, "history.epochs");
  const nlohmann::json& evaluations = h.at(j, "history.evaluations");
  if (!epochs.is_array()) h.fail("history.epochs", "must be a list");
  if (!evaluations.is_array()) h.fail("history.evaluations", "must be a list");
  for (const nlohmann::json& e : epochs) {
    train_epoch_report r;
    r.epoch = h.integer(e, "epochs[].epoch");
    r.epochs = static_cast<int64_t>(epochs.size());
    r.loss = h.number(e, "epochs[].loss");
    r.accuracy = h.number(e, "epochs[].accuracy");
    r.eval_loss = h.number(e, "epochs[].eval_loss");
    r.on_validation = h.boolean(e, "epochs[].on_validation");
    r.best = h.boolean(e, "epochs[].best");
    h.range("epochs[].epoch", static_cast<double>(r.epoch), 1, 1e9);
    h.range("epochs[].accuracy", r.accuracy, 0, 1);
    out.epochs.push_back(r);
  }
  for (const nlohmann::json& e : evaluations) out.evaluations.push_back(evaluation_from_json(e, h));
  return out;
}

}  // namespace attn::train
