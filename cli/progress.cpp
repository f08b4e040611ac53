#include "progress.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace attn::cli {

progress_bar::progress_bar(int64_t total, std::string unit, bool wanted)
    : enabled_(wanted && isatty(STDERR_FILENO) != 0), total_(total), unit_(std::move(unit)) {}

progress_bar::~progress_bar() { clear(); }

void progress_bar::clear() {
  // "\r" then erase the line: the bar leaves nothing behind for the next message.
  if (drawn_) fmt::print(stderr, "\r\x1b[K");
  drawn_ = false;
}

void progress_bar::update(int64_t done, int64_t items) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (drawn_ && now - last_ < std::chrono::milliseconds(100)) return;
  last_ = now;
  draw(done, items);
}

void progress_bar::draw(int64_t done, int64_t items) {
  drawn_ = true;
  if (total_ <= 0) {
    fmt::print(stderr, "\r{} {}", items, unit_);
  } else {
    constexpr int width = 30;
    const double fraction =
        std::clamp(static_cast<double>(done) / static_cast<double>(total_), 0.0, 1.0);
    const int filled = static_cast<int>(fraction * width);
    fmt::print(stderr, "\r[{}{}] {:3.0f}%  {} {}", std::string(static_cast<size_t>(filled), '#'),
               std::string(static_cast<size_t>(width - filled), '.'), fraction * 100.0, items,
               unit_);
  }
  std::fflush(stderr);
}

}  // namespace attn::cli
