// A progress bar on standard error, drawn only when standard error is a terminal (so logs and
// pipes stay clean), redrawn at most ten times a second.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace attn::cli {

class progress_bar {
 public:
  // total: the amount of work (bytes of input, say) when known, 0 when not (then only the count
  // of items is shown). unit: what an item is ("sentences"). wanted: false keeps it off even on
  // a terminal (when the data itself goes to that terminal, say).
  progress_bar(int64_t total, std::string unit, bool wanted = true);
  ~progress_bar();  // clears the bar

  void update(int64_t done, int64_t items);
  // Erases the bar so that a message can be printed; the next update draws it again.
  void clear();

 private:
  void draw(int64_t done, int64_t items);

  bool enabled_;
  int64_t total_;
  std::string unit_;
  std::chrono::steady_clock::time_point last_{};
  bool drawn_ = false;
};

}  // namespace attn::cli
