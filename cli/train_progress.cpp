#include "train_progress.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

namespace attn::cli {

std::string format_duration(double seconds) {
  const auto s = static_cast<int64_t>(std::llround(std::max(0.0, seconds)));
  if (s >= 3600) return fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60);
  return fmt::format("{}:{:02}", s / 60, s % 60);
}

train_progress::train_progress(bool language_model, bool streamed, bool translation)
    : terminal_(isatty(STDERR_FILENO) != 0), language_model_(language_model || translation),
      streamed_(streamed || language_model || translation), translation_(translation) {}

train_progress::~train_progress() { clear(); }

void train_progress::clear() {
  if (drawn_) fmt::print(stderr, "\r\x1b[K");
  drawn_ = false;
}

namespace {

// "  MFU 12.3%" after the tokens a second (nanoGPT's measure: the share of the FMA peak), where measured.
std::string mfu_text(const train_step_report& r) {
  return r.mfu > 0 ? fmt::format("  MFU {:.1f}%", 100 * r.mfu) : std::string();
}

}  // namespace

void train_progress::step(const train_step_report& r) {
  const auto now = std::chrono::steady_clock::now();
  if (!terminal_) {
    if (!streamed_ || now - last_line_ < std::chrono::seconds(5)) return;
    last_line_ = now;
    // Not "epoch …" at the line's start: logs are read for the epochs' own lines by that.
    fmt::print(stderr, "progress: epoch {}/{} step {}/{}  loss {:.4f}  lr {:.2e}  {:.0f} tokens/s{}  ETA {}\n",
               r.epoch, r.epochs, r.step, r.steps, r.loss, r.lr, r.tokens_per_second, mfu_text(r),
               format_duration(r.eta_seconds));
    std::fflush(stderr);
    return;
  }
  // At most ten redraws a second, but always the epoch's last step.
  if (drawn_ && r.step != r.steps && now - last_ < std::chrono::milliseconds(100)) return;
  last_ = now;
  constexpr int64_t width = 20;
  const int64_t filled = r.steps > 0 ? r.step * width / r.steps : width;
  fmt::print(stderr, "\r\x1b[Kepoch {}/{} [{}{}] step {}/{}  loss {:.4f}  {:.0f} tokens/s{}  ETA {}",
             r.epoch, r.epochs, std::string(static_cast<size_t>(filled), '#'),
             std::string(static_cast<size_t>(width - filled), '.'), r.step, r.steps, r.loss,
             r.tokens_per_second, mfu_text(r), format_duration(r.eta_seconds));
  std::fflush(stderr);
  drawn_ = true;
}

void train_progress::eval(const train_eval_report& r) {
  clear();
  if (translation_)
    fmt::print(stderr, "step {}/{}  {} tokens  valid perplexity {:.2f}  BLEU {:.2f} (greedy)\n", r.step, r.steps,
               r.tokens, std::exp(r.loss), 100 * r.accuracy);
  else if (language_model_)
    fmt::print(stderr, "step {}/{}  {} tokens  valid perplexity {:.2f}  accuracy {:.4f}\n", r.step,
               r.steps, r.tokens, std::exp(r.loss), r.accuracy);
  else  // masked-word: the hidden words' loss and top-1 share
    fmt::print(stderr, "step {}/{}  {} tokens  valid loss {:.4f}  accuracy {:.4f}\n", r.step,
               r.steps, r.tokens, r.loss, r.accuracy);
  std::fflush(stderr);
}

void train_progress::epoch(const train_epoch_report& r) {
  clear();
  if (translation_ && r.on_validation) {
    fmt::print(stderr, "epoch {}/{}  loss {:.4f}  valid perplexity {:.2f}  BLEU {:.2f} (greedy)  {:.0f} tokens/s  "
                       "{:.1f} s\n",
               r.epoch, r.epochs, r.loss, std::exp(r.eval_loss), 100 * r.accuracy, r.tokens_per_second, r.seconds);
    std::fflush(stderr);
    return;
  }
  if (translation_) {  // nothing held out: the training loss alone
    fmt::print(stderr, "epoch {}/{}  loss {:.4f}  {:.0f} tokens/s  {:.1f} s\n", r.epoch, r.epochs, r.loss,
               r.tokens_per_second, r.seconds);
    std::fflush(stderr);
    return;
  }
  if (language_model_) {
    fmt::print(stderr, "epoch {}/{}  loss {:.4f}  {} perplexity {:.2f}  accuracy {:.4f} (n {})  "
                       "{:.0f} tokens/s  {:.1f} s\n",
               r.epoch, r.epochs, r.loss, r.on_validation ? "valid" : "train",
               std::exp(r.on_validation ? r.eval_loss : r.loss), r.accuracy, r.n,
               r.tokens_per_second, r.seconds);
    std::fflush(stderr);
    return;
  }
  fmt::print(stderr, "epoch {}/{}  loss {:.4f}  {} accuracy {:.4f} (n {})  {:.0f} tokens/s  {:.1f} s\n",
             r.epoch, r.epochs, r.loss, r.on_validation ? "valid" : "train", r.accuracy, r.n,
             r.tokens_per_second, r.seconds);
  std::fflush(stderr);
}

}  // namespace attn::cli
