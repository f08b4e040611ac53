// A run's training curve: what attn train scored as it went (each epoch's training loss and
// held-out score; a corpus run's held-out scores every --eval-steps), kept in the model file
// ("history" metadata) and drawn as an SVG (attn train --plot curve.svg, and the page of attn
// heatmap --model).
//
//   attn::text_model m = attn::text_model::load("model.safetensors");
//   std::string svg = attn::render_training_curve_svg(m.history(), "model.safetensors");
#pragma once

#include <string>
#include <vector>

#include "attn/train.hpp"

namespace attn {

struct training_history {
  std::vector<train_epoch_report> epochs;
  std::vector<train_eval_report> evaluations;  // masked-word, lm with --eval-steps
  bool empty() const { return epochs.empty() && evaluations.empty(); }
};

// Two panels side by side: the losses (training, held-out) and the held-out accuracy, against
// the epochs, or against the tokens trained on when the run scored every --eval-steps. A usage
// error when the history is empty.
std::string render_training_curve_svg(const training_history& history, const std::string& title = "");

}  // namespace attn
