// What `attn train` shows on standard error: on a terminal a bar redrawn as it goes (epoch, step,
// loss, tokens/s, ETA); otherwise nothing between epochs, except for the streamed tasks (a
// language model or a context model, whose one epoch may last hours): a plain line every 5 s
// ("progress: epoch …"), so a log or a pipe shows the run moving from its first seconds. Either way one plain line per epoch with
// its loss and accuracy (a language model's held-out perplexity), and one per mid-epoch score
// (--eval-steps), so logs keep the history.
#pragma once

#include <chrono>

#include "attn/train.hpp"

namespace attn::cli {

class train_progress {
 public:
  // translation: a translator's held-out score is the perplexity of the references and the BLEU of
  // greedy translations (held in the reports' accuracy, as a fraction).
  explicit train_progress(bool language_model = false, bool streamed = false, bool translation = false);
  ~train_progress();
  void step(const train_step_report& r);
  void epoch(const train_epoch_report& r);
  void eval(const train_eval_report& r);
  void clear();  // erases the bar before a message

 private:
  bool terminal_, language_model_, streamed_, translation_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point last_line_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_{};
};

// "1:05" or "12:03:40"
std::string format_duration(double seconds);

}  // namespace attn::cli
