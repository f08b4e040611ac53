// What attn train and attn.train share before training: the task and duration names, and each
// task's defaults where they differ from train_options{}'s (the classifier's and the seeds'
// next-word model's), used for every option not given.
#include <fmt/format.h>

#include <charconv>
#include <cstring>
#include <cmath>
#include <limits>

#include "attn/error.hpp"
#include "attn/train.hpp"

namespace attn {

namespace {

// A context model wants depth, word order (learned positions: without them attention reads a
// bag of words and cannot tell where the gap is) and little dropout, and keeps the default
// vectors frozen (the model file then holds only what it learned).
constexpr int64_t masked_word_layers = 2;
constexpr double masked_word_dropout = 0.1;
// A language model: GPT-2's block arrangement (pre-norm, learned positions over the context),
// four of them, light dropout (docs/LM.md has the measurements).
constexpr int64_t lm_layers = 4;
constexpr double lm_dropout = 0.1;
// A word seen once is <unk>: the model then learns how often a word it does not know comes, as
// held-out text has them (with every training word in the vocabulary, <unk> is never a target
// and each unknown held-out word costs ~15 nats: 118 → 182 held-out perplexity on a book).
constexpr int64_t lm_min_count = 2;
constexpr double lm_lr = 0.003;  // 800k Wikipedia tokens: held-out perplexity 409, against 507 at 0.001

}  // namespace

train_options task_defaults(text_task task) {
  train_options o;
  o.task = task;
  if (task == text_task::masked_word) {
    o.finetune_embeddings = false;
    o.positions = true;
    o.layers = masked_word_layers;
    o.dropout = masked_word_dropout;
  }
  if (task == text_task::lm) {
    o.min_count = lm_min_count;
    o.layers = lm_layers;
    o.norm_first = true;
    o.dropout = lm_dropout;
    o.lr = lm_lr;
  }
  return o;
}

text_task parse_task(const std::string& name, const std::string& option) {
  if (name == "next-word") return text_task::next_word;
  if (name == "classify") return text_task::classify;
  if (name == "masked-word") return text_task::masked_word;
  if (name == "lm") return text_task::lm;
  throw_usage(fmt::format("{} '{}': expected next-word, classify, masked-word or lm", option, name));
}

double parse_duration(const std::string& text, const std::string& option) {
  // Every number takes its unit, and the units come at most once each, largest first: "1h30m"
  // and "90s", never "30" (seconds? minutes?), "1h30" or "1s1s", which would guess.
  double seconds = 0;
  const char* at = text.data();
  const char* end = text.data() + text.size();
  bool ok = at < end;
  int next_unit = 0;  // the units not yet taken: h (0), m (1), s (2)
  while (ok && at < end) {
    double value = 0;
    const auto [after, ec] = std::from_chars(at, end, value);
    if (ec != std::errc() || !(value >= 0) || after == end) {
      ok = false;
      break;
    }
    const char* units = "hms";
    const char* u = std::strchr(units, *after);
    if (*after == '\0' || u == nullptr || u - units < next_unit) {
      ok = false;
      break;
    }
    next_unit = static_cast<int>(u - units) + 1;
    seconds += value * (*u == 'h' ? 3600 : *u == 'm' ? 60 : 1);
    at = after + 1;
  }
  if (!ok || !(seconds > 0) || !std::isfinite(seconds))
    throw_usage(fmt::format("{} '{}': expected a duration such as 90s, 30m, 1h or 1h30m (a unit after "
                            "every number, h, m and s at most once each, in that order)",
                            option, text));
  return seconds;
}

namespace {

// The ranges attn train's flags hold their values to (cli/cmd_train.cpp's validators), for the
// callers that have no such flags (attn.train): one usage error naming the first option outside.
void check_ranges(const train_options& o, option_spelling spelling) {
  const bool cli = spelling == option_spelling::cli;
  // lo ≤ value ≤ hi (above_lo: lo < value), finite; hi = unbounded: any finite value.
  constexpr double unbounded = std::numeric_limits<double>::max();
  const auto check = [&](const char* flag, const char* keyword, double value, double lo, double hi,
                         bool above_lo = false) {
    if ((above_lo ? value > lo : value >= lo) && value <= hi) return;  // NaN and ±inf fail
    const std::string range = hi < unbounded ? fmt::format("must be in {}{}, {}]", above_lo ? "(" : "[", lo, hi)
                              : above_lo     ? fmt::format("must be more than {}", lo)
                                             : fmt::format("must be {} or more", lo);
    throw_usage(fmt::format("{}: {}", cli ? fmt::format("{} {}", flag, value) : fmt::format("{}={}", keyword, value),
                            range));
  };
  const auto d = [](int64_t v) { return static_cast<double>(v); };
  check("--learn-embeddings", "learn_embeddings", d(o.learn_embeddings), 0, unbounded);
  check("--min-count", "min_count", d(o.min_count), 0, unbounded);
  check("--heads", "heads", d(o.heads), 1, unbounded);
  check("--dim", "dim", d(o.dim), 0, unbounded);
  check("--layers", "layers", d(o.layers), 0, unbounded);
  check("--feedforward", "feedforward", d(o.feedforward), 0, unbounded);
  check("--hidden", "hidden", d(o.hidden), 0, unbounded);
  check("--dropout", "dropout", o.dropout, 0, 0.95);
  check("--window", "window", d(o.window), -1, 64);  // -1: the task's default
  check("--shards", "shards", d(o.shards), 1, unbounded);
  check("--epochs", "epochs", d(o.epochs), 0, unbounded);
  check("--patience", "patience", d(o.patience), 1, unbounded);
  check("--lr", "lr", o.lr, 0, 1, true);  // past 1 AdamW only diverges (check_options says so too)
  check("--batch", "batch", d(o.batch), 1, unbounded);
  check("--weight-decay", "weight_decay", o.weight_decay, 0, unbounded);
  check("--clip", "clip", o.clip, 0, unbounded);
  check("--warmup", "warmup", o.warmup, 0, 1);
  check("--mask", "mask_share", o.mask_share, 0.01, 0.9);
  check("--max-length", "max_length", d(o.max_length), 2, 1 << 16);
  check("--drop-final-stop", "drop_final_stop", o.drop_final_stop, 0, 1);
  check("--outputs", "max_outputs", d(o.max_outputs), 1, unbounded);
  check("--checkpoint-steps", "checkpoint_steps", d(o.checkpoint_steps), 0, unbounded);
  check("--save-steps", "save_steps", d(o.save_steps), 0, unbounded);
  check("--vocab", "vocab", d(o.vocab), 1, unbounded);
  check("--context", "context", d(o.context), 1, unbounded);
  check("--max-tokens", "max_tokens", d(o.max_tokens), 0, unbounded);
  check("--time", "time", o.time_limit, 0, unbounded);
  check("--eval-steps", "eval_steps", d(o.eval_steps), 0, unbounded);
  check("--threads", "threads", d(o.threads), 0, 4096);
  for (const int64_t cut : o.adaptive_softmax) check("--adaptive-softmax", "adaptive_softmax", d(cut), 1, unbounded);
}

}  // namespace

void check_task_options(const train_options& o, option_spelling spelling) {
  check_ranges(o, spelling);
  const bool cli = spelling == option_spelling::cli;
  const auto named = [&](const char* flag, const char* keyword) { return cli ? flag : keyword; };
  const char* streamed_tasks = named("--task masked-word and lm", "task='masked-word' and 'lm'");
  const bool lm = o.task == text_task::lm, streamed = lm || o.task == text_task::masked_word;
  if (!streamed && o.max_tokens > 0)
    throw_usage(fmt::format("{} is for {}", named("--max-tokens", "max_tokens"), streamed_tasks));
  if (!streamed && o.dtype != train_dtype::float32)
    throw_usage(fmt::format("{} is for {}", named("--dtype bf16", "dtype='bf16'"), streamed_tasks));
  if (!streamed && !o.adaptive_softmax.empty())
    throw_usage(fmt::format("{} is for {}", named("--adaptive-softmax", "adaptive_softmax"), streamed_tasks));
  if (o.task != text_task::masked_word && (o.group_by_length || o.pack_sentences))
    throw_usage(fmt::format("{} is for {}", named("--group-by-length and --pack-sentences", "group_by_length and pack_sentences"),
                            named("--task masked-word", "task='masked-word'")));
  if (o.group_by_length && o.pack_sentences)
    throw_usage(fmt::format("{} and {} are two ways to cut padding: choose one", named("--group-by-length", "group_by_length"),
                            named("--pack-sentences", "pack_sentences")));
  if (o.task != text_task::masked_word && o.drop_final_stop > 0)
    throw_usage(fmt::format("{} is for {}", named("--drop-final-stop", "drop_final_stop"),
                            named("--task masked-word", "task='masked-word'")));
  if (!streamed && o.save_steps > 0)
    throw_usage(fmt::format("{} is for {}", named("--save-steps", "save_steps"), streamed_tasks));
}

}  // namespace attn
