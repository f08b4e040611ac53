// The rows of attn/train_option_table.hpp: every training option attn train and attn.train take,
// with the tasks that take it and each task's own default.
#include <fmt/format.h>

#include "attn/train_option_table.hpp"

namespace attn {

namespace {

using kind = option_kind;
using shape = option_range::shape;
constexpr option_range any{};
constexpr option_range positive{shape::positive};
constexpr option_range non_negative{shape::non_negative};
constexpr option_range between(double lo, double hi) { return {shape::between, lo, hi}; }

constexpr text_task next_word = text_task::next_word, classify = text_task::classify,
                    masked_word = text_task::masked_word, lm = text_task::lm, translate = text_task::translate;
// The in-memory tasks, whose held-out lines may come from a file.
constexpr task_set line_tasks = task_set(next_word) | classify;
// The streamed tasks (src/train/corpus_trainer.cpp).
constexpr task_set streamed_tasks = task_set(masked_word) | lm;
// The tasks whose runs keep a checkpoint, resume from it and end at a time or a step.
constexpr task_set resumable_tasks = every_task;

// A context model wants depth, word order (learned positions: without them attention reads a
// bag of words and cannot tell where the gap is) and little dropout, and keeps the default
// vectors frozen (the model file then holds only what it learned).
constexpr double masked_word_layers = 2, masked_word_dropout = 0.1;
// A language model: GPT-2's block arrangement (pre-norm, learned positions over the context),
// four of them, light dropout (docs/LM.md has the measurements).
constexpr double lm_layers = 4, lm_dropout = 0.1;
// A word seen once is <unk>: the model then learns how often a word it does not know comes, as
// held-out text has them (with every training word in the vocabulary, <unk> is never a target
// and each unknown held-out word costs ~15 nats: 118 → 182 held-out perplexity on a book).
constexpr double lm_min_count = 2;
constexpr double lm_lr = 0.003;  // 800k Wikipedia tokens: held-out perplexity 409, against 507 at 0.001
// A translator of the tutorials' size for ~30k pairs (Multi30k: docs/TRANSLATE.md): 3 + 3 layers at
// width 256, feed-forward 1024, dropout 0.1; pairs up to 128 pieces a side.
constexpr double translate_width = 256, translate_layers = 3, translate_feedforward = 1024,
                 translate_dropout = 0.1, translate_max_length = 128, translate_pieces = 8000;

std::vector<train_option> make_table() {
  using o = train_options;
  return {
      // Every task's.
      {"learn_embeddings", "--learn-embeddings", kind::integer, &o::learn_embeddings, word_tasks, positive, {},
       "Learn embeddings of this width from the data instead of pre-trained ones"},
      {"finetune_embeddings", "--finetune-embeddings,!--frozen-embeddings", kind::flag, &o::finetune_embeddings,
       word_tasks, any, {{masked_word, 0}},
       "Train the pre-trained vectors too (the default; with the embedded GloVe, a copy of each training word's "
       "vector), or keep them frozen"},
      {"positions", "--positions", kind::flag, &o::positions, word_tasks, any, {{masked_word, 1}},
       "Add learned positional embeddings"},
      {"heads", "--heads", kind::integer, &o::heads, every_task, positive, {}, "Attention heads (default 4; divides --dim)"},
      {"dim", "--dim", kind::integer, &o::dim, every_task, positive, {{translate, translate_width}},
       "Attention width (default: the embedding width; translate: 256, the shared embedding's width too)"},
      {"hidden", "--hidden", kind::integer, &o::hidden, word_tasks, positive, {},
       "MLP hidden width (default: the attention width)"},
      {"epochs", "--epochs", kind::integer, &o::epochs, every_task, positive, {},
       "Most passes over the data (default: enough for 1000 optimiser steps, at least 4, at most 1000; early "
       "stopping may end sooner)"},
      {"patience", "--patience", kind::integer, &o::patience, every_task, positive, {},
       "Stop after this many epochs without a better validation score (default 3)"},
      {"min_count", "--min-count", kind::integer, &o::min_count, word_tasks, non_negative, {{lm, lm_min_count}},
       "Training words without a pre-trained vector that occur at least N times get a learned row (default 1; 0: "
       "skip them). lm: words seen fewer than N times are <unk> (default 2, so the model learns how often unknown "
       "words come)"},
      {"layers", "--layers", kind::integer, &o::layers, every_task, non_negative,
       {{masked_word, masked_word_layers}, {lm, lm_layers}, {translate, translate_layers}},
       "0: the seeds' attention layer; N: N Transformer encoder layers (residuals, layer norm, feed-forward); "
       "translate: N encoder and N decoder layers (default 3)"},
      {"norm_first", "--norm-first", kind::flag, &o::norm_first, word_tasks, any, {{lm, 1}},
       "Encoder layers pre-norm (PyTorch's norm_first=True, GPT-2's blocks), with a final layer norm after them; "
       "default: post-norm, PyTorch's default"},
      {"feedforward", "--feedforward", kind::integer, &o::feedforward, every_task, positive,
       {{translate, translate_feedforward}},
       "Encoder layers' feed-forward width (default: twice --dim; translate: 1024)"},
      {"pool", "--pool", kind::pool, &o::pool, word_tasks, any, {},
       "How token vectors become one: max (default), mean (the seeds'), mean+max or attention (a learned query's "
       "weights)"},
      {"dropout", "--dropout", kind::number, &o::dropout, every_task, between(0, 0.95),
       {{masked_word, masked_word_dropout}, {lm, lm_dropout}, {translate, translate_dropout}},
       "Dropout on the embeddings and the pooled vector (default 0.3; masked-word, lm and translate: 0.1)"},
      {"window", "--window", kind::integer, &o::window, word_tasks, between(0, 64), {},
       "Tokens per word window before the attention: each token's vector mixed with its neighbours' (a 1-D "
       "convolution; centred, causal for next-word); 0: none (default: 3 for classify, none otherwise)"},
      {"shards", "--shards", kind::integer, &o::shards, every_task, positive, {},
       "Cut each batch into N shards, their gradients computed apart and summed in order (default 1; attn-mpi: "
       "one per rank); the shards run side by side, one per thread, each on its own copy of the network, and the "
       "model is the same on any number of threads (a translator's shards run in turn); attn train --shards K writes "
       "the model of mpirun -n K attn-mpi train bit for bit"},
      // Past 1 AdamW moves each weight by about the rate every step: the run only diverges.
      {"lr", "--lr", kind::number, &o::lr, every_task, {shape::up_to, 0, 1}, {{lm, lm_lr}},
       "Peak learning rate, above 0 and at most 1 (default 0.001; lm: 0.003)"},
      {"batch", "--batch", kind::integer, &o::batch, word_tasks, positive, {}, "Lines per step (default 32; lm: windows)"},
      {"seed", "--seed", kind::seed, &o::seed, every_task, any, {},
       "Random seed, 0 to 2^64 − 1 (default 0): same seed, same model", "UINT"},
      {"weight_decay", "--weight-decay", kind::number, &o::weight_decay, every_task, non_negative, {},
       "AdamW weight decay (default 0.01)"},
      {"clip", "--clip", kind::number, &o::clip, every_task, non_negative, {}, "Gradient norm limit (default 1; 0 = none)"},
      {"warmup", "--warmup", kind::number, &o::warmup, every_task, between(0, 1), {},
       "Share of steps warming up (default 0.05)"},
      // The command line's --threads is every subcommand's (it sets OpenMP's threads for the process).
      {"threads", "--threads", kind::integer, &o::threads, every_task, between(1, 4096), {},
       "Threads for this run (default: all cores)", nullptr, option_surface::python_only},

      // next-word and classify.
      {"valid", "--valid", kind::path, &o::valid, line_tasks | translate, any, {},
       "Validation file (same format), scored every epoch; default: 10% of the training lines (at most 5000) held "
       "out when there are at least 200 (translate with --data: held-out source<TAB>target lines)"},

      // masked-word.
      {"mask_share", "--mask", kind::number, &o::mask_share, masked_word, between(0.01, 0.9), {},
       "Share of the words hidden (default 0.15)"},
      {"max_length", "--max-length", kind::integer, &o::max_length, task_set(masked_word) | translate,
       between(2, 1 << 16), {{translate, translate_max_length}},
       "Longer sentences are cut into pieces of this many tokens (masked-word, default 64); a translation pair with "
       "a side of more pieces (</s> included) is skipped and counted, never cut (translate, default 128)"},
      {"group_by_length", "--group-by-length", kind::flag, &o::group_by_length, masked_word, any, {},
       "Batches of sentences of like length, so little of a batch is padding (Hugging Face's group_by_length; off "
       "by default)"},
      {"pack_sentences", "--pack-sentences", kind::flag, &o::pack_sentences, masked_word, any, {},
       "Consecutive sentences joined into sequences of up to --max-length tokens, so that little of a batch is "
       "padding (RoBERTa's FULL-SENTENCES inputs; off by default)"},
      {"drop_final_stop", "--drop-final-stop", kind::number, &o::drop_final_stop, masked_word, between(0, 1), {},
       "The share of sentences read without their final . ! or ?, so that a text ending without one reads as text "
       "(default 0)"},
      {"max_outputs", "--outputs", kind::integer, &o::max_outputs, masked_word, positive, {},
       "The most frequent corpus words it can predict (default 30000)"},

      // The one loop's checkpoints, stops and evaluation cadence (every task), and the streamed tasks' own.
      {"checkpoint", "--checkpoint", kind::path, &o::checkpoint, resumable_tasks, any, {},
       "Training state file (default: OUTPUT.checkpoint), saved every --checkpoint-steps and on Ctrl-C, removed "
       "when the run completes"},
      {"checkpoint_steps", "--checkpoint-steps", kind::integer, &o::checkpoint_steps, resumable_tasks, non_negative, {},
       "Save the training state every N steps (default 500; 0: only on Ctrl-C)"},
      {"resume", "--resume", kind::flag, &o::resume, resumable_tasks, any, {},
       "Go on from the checkpoint (same command otherwise); the model comes out as if never stopped"},
      // attn.train stops at Ctrl-C (KeyboardInterrupt) instead.
      {"stop_after_steps", "--stop-after-steps", kind::integer, &o::stop_after_steps, resumable_tasks, positive, {},
       "Stop after N steps in all, saving the checkpoint, as Ctrl-C does", nullptr, option_surface::cli_only},
      {"save_steps", "--save-steps", kind::integer, &o::save_steps, streamed_tasks | translate, positive, {},
       "Every N steps also write the model so far to OUTPUT with .stepN before its extension "
       "(model.step2000.safetensors; masked-word and lm: N a multiple of --eval-steps)"},
      {"max_tokens", "--max-tokens", kind::integer, &o::max_tokens, streamed_tasks, positive, {},
       "Stop after training on about N tokens (lm: N exactly, in full windows; masked-word: the steps that read N "
       "at the corpus's mean tokens a step)"},
      {"time", "--time", kind::duration, &o::time_limit, resumable_tasks, non_negative, {},
       "Stop after this much training time (90s, 30m, 1h30m); the learning rate decays over it", "DURATION"},
      {"dtype", "--dtype", kind::dtype, &o::dtype, streamed_tasks | translate, any, {},
       "float32 (default) or bf16: products on bf16 operands with float32 sums, as PyTorch's autocast (lm and "
       "masked-word: the tied output's three; translate: every projection, feed-forward and the tied output, "
       "on AMX tiles where the CPU has them); the model file stays float32"},
      {"device", "--device", kind::device, &o::device, streamed_tasks, any, {},
       "cpu (default) or cuda: the training step on a CUDA GPU (a CUDA build; docs/GPU.md), where --dtype bf16 "
       "runs every product and the attention on bf16 operands with float32 sums and float32 master weights"},
      {"adaptive_softmax", "--adaptive-softmax", kind::cuts, &o::adaptive_softmax, streamed_tasks, positive, {},
       "An adaptive softmax with these cuts over the output words, most frequent first (PyTorch's "
       "AdaptiveLogSoftmaxWithLoss cutoffs, e.g. 2000,6000): a head of the first CUT words and a cluster between "
       "each cut and the next, or the end",
       "CUT,..."},
      {"eval_steps", "--eval-steps", kind::integer, &o::eval_steps, resumable_tasks, positive, {},
       "Also score the held-out sequences every N steps (default: each epoch's end)"},

      // translate.
      {"source", "--source", kind::path, &o::source, translate, any, {},
       "Source sentences, one a line, aligned by line with --target (or --data FILE of source<TAB>target lines)"},
      {"target", "--target", kind::path, &o::target, translate, any, {}, "Target sentences, one a line"},
      {"valid_source", "--valid-source", kind::path, &o::valid_source, translate, any, {},
       "Held-out source sentences (with --valid-target), scored every epoch or --eval-steps; default: 5% of the "
       "pairs, at most 1000, held out"},
      {"valid_target", "--valid-target", kind::path, &o::valid_target, translate, any, {},
       "Held-out target sentences"},
      {"pieces", "--pieces", kind::integer, &o::pieces, task_set(translate) | lm, positive, {{translate, translate_pieces}},
       "Subword pieces (SentencePiece BPE) learned from the training text, cased, stored in the model file "
       "(translate: joint, from both sides of the pairs, default 8000; lm: instead of lowercased words, off by default)"},
      {"label_smoothing", "--label-smoothing", kind::number, &o::label_smoothing, translate, between(0, 0.99), {},
       "Label smoothing of the training loss (default 0.1)"},
      {"residual_dropout", "--residual-dropout", kind::number, &o::residual_dropout, translate, between(0, 0.95), {},
       "Dropout on each layer's attention and feed-forward outputs before the residual add (Vaswani's residual "
       "dropout, nn.Transformer's dropout inside its layers; default 0: --dropout drops the embeddings only)"},
      {"batch_tokens", "--batch-tokens", kind::integer, &o::batch_tokens, translate, positive, {},
       "Each batch's pairs of like length, at most this many padded source and target tokens (default 4096)"},

      // lm.
      {"vocab", "--vocab", kind::integer, &o::vocab, lm, positive, {},
       "The N most frequent training words, plus <unk> and <eos> (default 10000)"},
      {"context", "--context", kind::integer, &o::context, lm, positive, {},
       "Tokens each window holds (learned positions up to it; default 128)"},
  };
}

}  // namespace

std::vector<text_task> task_set::tasks() const {
  std::vector<text_task> out;
  for (const task_kind& k : task_kinds())
    if (has(k.task)) out.push_back(k.task);
  return out;
}

const std::vector<train_option>& train_option_table() {
  static const std::vector<train_option> table = make_table();
  return table;
}

const train_option* find_train_option(const std::string& keyword) {
  for (const train_option& option : train_option_table())
    if (keyword == option.keyword) return &option;
  return nullptr;
}

std::string name_tasks(task_set tasks, option_spelling spelling) {
  std::vector<std::string> names;
  for (text_task t : tasks.tasks())
    names.push_back(spelling == option_spelling::cli ? task_name(t) : fmt::format("'{}'", task_name(t)));
  std::string list = names.empty() ? std::string() : names.back();
  if (names.size() >= 2)
    list = fmt::format("{} and {}", fmt::join(names.begin(), names.end() - 1, ", "), names.back());
  return spelling == option_spelling::cli ? fmt::format("--task {}", list) : fmt::format("task={}", list);
}

std::string name_option(const train_option& option, option_spelling spelling) {
  if (spelling == option_spelling::python) return option.keyword;
  const std::string flags = option.flag;
  return flags.substr(0, flags.find(','));
}

train_options task_defaults(text_task task) {
  train_options o;
  o.task = task;
  for (const train_option& option : train_option_table())
    for (const task_default& d : option.task_defaults) {
      if (d.task != task) continue;
      std::visit(
          [&](auto member) {
            using value_type = std::remove_reference_t<decltype(o.*member)>;
            if constexpr (std::is_arithmetic_v<value_type>) o.*member = static_cast<value_type>(d.value);
          },
          option.field);
    }
  return o;
}

double option_default(const train_option& option, text_task task) {
  const train_options o = task_defaults(task);
  return std::visit(
      [&](auto member) -> double {
        using value_type = std::remove_cvref_t<decltype(o.*member)>;
        if constexpr (std::is_arithmetic_v<value_type>) return static_cast<double>(o.*member);
        else return 0;
      },
      option.field);
}

}  // namespace attn
