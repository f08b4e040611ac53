// The tasks, one row each (task_kind.hpp): the one place that names them.
#include "attn/task_kind.hpp"

#include <array>

namespace attn {

namespace {

constexpr std::array<task_kind, 5> kinds{{
    {.task = text_task::next_word, .name = "next-word", .training = "a next-word",
     .checkpoint_format = "attn-next-word-training/1", .every_prefix = true, .causal = true},
    // A classifier reads each token with its neighbours: a word window of three tokens by
    // default (measured on SST-2: docs/TRAINING.md).
    {.task = text_task::classify, .name = "classify", .training = "a classify",
     .checkpoint_format = "attn-classify-training/1", .labelled = true, .default_window = 3},
    {.task = text_task::masked_word, .name = "masked-word", .training = "a masked-word",
     .checkpoint_format = "attn-masked-word-training/1",
     .tied_head = "tied output (scored against the word vectors)", .streamed = true,
     .word_output = true, .hides_words = true},
    {.task = text_task::lm, .name = "lm", .training = "a language-model",
     .checkpoint_format = "attn-lm-training/1",
     .tied_head = "tied output (the input rows score the next token)", .streamed = true,
     .causal = true, .word_output = true, .autoregressive = true, .reads_unknown = true},
    {.task = text_task::translate, .name = "translate", .training = "a translation",
     .checkpoint_format = "attn-translate-training/1", .pairs = true},
}};

}  // namespace

std::span<const task_kind> task_kinds() { return kinds; }

const task_kind& kind_of(text_task task) {
  for (const task_kind& k : kinds)
    if (k.task == task) return k;
  return kinds.front();  // (every enumerator has its row)
}

const task_kind* task_named(std::string_view name) {
  for (const task_kind& k : kinds)
    if (name == k.name) return &k;
  return nullptr;
}

std::string task_name(text_task task) { return kind_of(task).name; }

}  // namespace attn
