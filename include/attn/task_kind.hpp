// What each training task is, asked instead of comparing task names: one row per task in
// src/train/task_kinds.cpp, which with task_named (the model file's and attn train --task's name
// → task) is the one place that names the tasks. Code that differs by task asks a row: "does it
// stream a corpus", "is it autoregressive", "its checkpoint format".
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace attn {

enum class text_task {
  next_word,  // each prefix of a line predicts the line's next word
  classify,   // "label<TAB>text" lines
  masked_word,  // plain text: hidden words predicted from the words on both sides, scored
                // against the word-vector table itself (no labels; a context model)
  lm,  // a language model: plain text as one stream of paragraphs, every position of a
       // causal window predicting the token after it (unknown and end-of-paragraph tokens
       // included), through the input table (tied output)
  translate,  // sentence pairs (source, target) in subword pieces: an encoder–decoder
              // (models/translator.hpp), a model of its own beside the word models
};
std::string task_name(text_task task);  // "next-word", "classify", "masked-word", "lm", "translate"

struct task_kind {
  text_task task;
  const char* name;               // in model files and attn train --task: "next-word"
  const char* training;           // a refused checkpoint's words for a run of it: "a next-word"
  const char* checkpoint_format;  // its training checkpoint's format: "attn-next-word-training/1"
  // attn train's words for its tied output head; empty: pooling and an MLP head, described from
  // the model's configuration.
  const char* tied_head = "";
  // Trains on plain text streamed in windows (masked-word, lm: corpus_trainer.cpp), not on lines
  // held in memory (next-word, classify: trainer.cpp).
  bool streamed = false;
  bool labelled = false;        // "label<TAB>text" lines, one class per line (classify)
  bool every_prefix = false;    // each prefix of a line predicts the line's next word (next-word)
  bool causal = false;          // attention sees the past only (next-word, lm)
  bool word_output = false;     // the output scores the word table itself (tied output: masked-word, lm)
  bool hides_words = false;     // reads hidden words: a hidden position scored, embed's --read hidden (masked-word)
  bool autoregressive = false;  // continues a text one token at a time: generate (lm)
  int64_t default_window = 0;  // attn train's --window when not given (0: no word window)
  // Reads text as tokens it learned: a word it does not know as <unk> (not left out), each
  // paragraph ending in <eos> (lm).
  bool reads_unknown = false;
  // Reads sentence pairs and trains the translator, its own model kind and file format
  // (attn/translation_model.hpp), not the word models' network (translate).
  bool pairs = false;
};

// Every task, in attn train --help's order.
std::span<const task_kind> task_kinds();
const task_kind& kind_of(text_task task);
// The task of that name, or null.
const task_kind* task_named(std::string_view name);

}  // namespace attn
