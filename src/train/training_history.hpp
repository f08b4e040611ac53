// A run's history as the model file keeps it ("history" metadata, JSON) and back. Only what the
// run scored, never how long it took: a resumed run's file equals the uninterrupted run's.
#pragma once

#include <string>

#include "attn/training_curve.hpp"
#include "io/json_fields.hpp"

namespace attn::train {

std::string history_json(const training_history& history);
// An input error naming the field (as `fields` names the file) when the text is not a history.
training_history parse_history(const std::string& text, const io::json_fields& fields);

nlohmann::json evaluation_json(const train_eval_report& r);
train_eval_report evaluation_from_json(const nlohmann::json& j, const io::json_fields& fields);

}  // namespace attn::train
