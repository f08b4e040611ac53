// Each task's defaults where they differ from train_options{}'s (the classifier's and the seeds'
// next-word model's): what attn train and attn.train use for every option not given.
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

}  // namespace attn
