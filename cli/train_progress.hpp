// What `attn train` shows on standard error: on a terminal a bar redrawn as it goes (epoch, step,
// loss, tokens/s, ETA); otherwise nothing between epochs. Either way one plain line per epoch
// with its loss and accuracy, so logs keep the history.
#pragma once

#include <chrono>

#include "attn/train.hpp"

namespace attn::cli {

class train_progress {
 public:
  train_progress();
  ~train_progress();
  void step(const train_step_report& r);
  void epoch(const train_epoch_report& r);
  void clear();  // erases the bar before a message

 private:
  bool terminal_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point last_{};
};

// "1:05" or "12:03:40"
std::string format_duration(double seconds);

}  // namespace attn::cli
