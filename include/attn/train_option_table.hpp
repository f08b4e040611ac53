// attn's training options as data: one row per option of train_options that a caller can set,
// with its attn.train keyword, its attn train flag, the tasks that take it, the range of its
// values, each task's default and its help. attn train's flags, attn.train's keywords, the
// checks of both and `attn train --help`'s groups are all made from this table, so an option is
// added by adding its row (and its member of train_options, and its use in the trainer).
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "attn/text_model.hpp"
#include "attn/train.hpp"

namespace attn {

// A set of tasks, one bit per text_task.
class task_set {
 public:
  constexpr task_set() = default;
  constexpr task_set(text_task task) : bits_(bit(task)) {}  // NOLINT: a task is a set of one
  constexpr task_set operator|(task_set other) const { return task_set(bits_ | other.bits_); }
  constexpr bool has(text_task task) const { return (bits_ & bit(task)) != 0; }
  constexpr bool operator==(const task_set& other) const = default;
  // The tasks in text_task's order.
  std::vector<text_task> tasks() const;

 private:
  explicit constexpr task_set(unsigned bits) : bits_(bits) {}
  static constexpr unsigned bit(text_task task) { return 1u << static_cast<unsigned>(task); }
  unsigned bits_ = 0;
};

// The word models' tasks (one network: models/network.hpp).
inline constexpr task_set word_tasks =
    task_set(text_task::next_word) | text_task::classify | text_task::masked_word | text_task::lm;
// Every task there is.
inline constexpr task_set every_task = word_tasks | text_task::translate;

// How an option's value is spelled and read: attn train parses each kind from text, attn.train
// takes each from a Python value.
enum class option_kind {
  integer,   // int64_t
  number,    // double
  flag,      // bool: a flag on the command line, True or False from Python
  path,      // std::string: a file name (os.PathLike from Python)
  seed,      // uint64_t, 0 … 2^64 − 1
  duration,  // double seconds: "90s", "30m", "1h30m" (Python: such a string or seconds)
  cuts,      // std::vector<int64_t>: "2000,6000" on the command line, a list from Python
  pool,      // pooling, by name
  dtype,     // train_dtype: "float32" or "bf16"
  device,    // train_device: "cpu" or "cuda"
};

// The values an option holds (numbers only): lo ≤ value ≤ hi, or lo < value where above_lo.
// attn train's validators hold a flag's value to it; attn.train allows the member's default too
// where it lies below (dim=0: the attention width as wide as the embeddings, window=-1: the
// task's window), as train_options does.
struct option_range {
  enum class shape {
    any,           // no limits
    positive,      // > 0 (integers: 1 or more)
    non_negative,  // ≥ 0
    between,       // [lo, hi]
    up_to,         // (0, hi]
  };
  shape form = shape::any;
  double lo = 0, hi = 0;
};

// Where the option lives in train_options.
using option_field = std::variant<int64_t train_options::*, double train_options::*, bool train_options::*,
                                  std::string train_options::*, uint64_t train_options::*, pooling train_options::*,
                                  train_dtype train_options::*, train_device train_options::*,
                                  std::vector<int64_t> train_options::*>;

// A task's own default, where it differs from train_options{}'s (a number, or 0/1 for a flag).
struct task_default {
  text_task task;
  double value;
};

// Where the option is spelled: on the command line, from Python, or both.
enum class option_surface { both, cli_only, python_only };

struct train_option {
  const char* keyword;  // attn.train's keyword: the member's name in train_options (time: time_limit)
  const char* flag;     // attn train's flag(s), as CLI11 takes them ("--mask", "--finetune-embeddings,!--frozen-embeddings")
  option_kind kind;
  option_field field;
  task_set tasks;  // the tasks that take it; given to another, it is a usage error naming these
  option_range range;
  std::vector<task_default> task_defaults;
  const char* help;  // attn train --help's text (the group says which tasks take it)
  const char* type_name = nullptr;  // attn train --help's name for the value, where CLI11's would not say it
  option_surface surface = option_surface::both;
};

// Every option, in the order attn train --help lists them within each group.
const std::vector<train_option>& train_option_table();
// The row whose keyword is `keyword`; null when none is.
const train_option* find_train_option(const std::string& keyword);

// The tasks as the caller names them: "--task masked-word and lm" or "task='masked-word' and 'lm'".
std::string name_tasks(task_set tasks, option_spelling spelling);
// The option as the caller names it: its flag's first name ("--mask") or its keyword ("mask_share").
std::string name_option(const train_option& option, option_spelling spelling);
// The default of `option` for `task`, as a number (flags: 0 or 1); only for numeric and flag kinds.
double option_default(const train_option& option, text_task task);

// Every option's value in its range (and the member's default where that lies below, as dim=0):
// else one usage error, "--dropout 2: must be in [0, 0.95]" or "dropout=2: must be in [0, 0.95]".
// train_text_model checks its options so, as the caller's flags would be.
void check_option_ranges(const train_options& options, option_spelling spelling);

// The checks attn train and attn.train make before training: every option in `given` (by
// keyword) is one the task takes (else a usage error: "--vocab is for --task lm"), every value is
// in its range, and the options agree with each other.
void check_task_options(const train_options& options, const std::vector<std::string>& given,
                        option_spelling spelling);

}  // namespace attn
