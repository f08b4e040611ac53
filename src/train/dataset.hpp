// Training and evaluation data: reading the task's file format, the word ↔ index maps, and
// turning sentences into padded batches for the network.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "attn/text_model.hpp"
#include "attn/train.hpp"
#include "models/network.hpp"

namespace attn::train {

struct text_example {
  std::vector<std::string> tokens;  // attn::tokenize of the text
  std::string label;                // classify only
  int64_t line = 0;                 // 1-based, for messages
};

// next-word: every non-blank line; classify: "label<TAB>text" per non-blank line (an input
// error names the line otherwise). CRLF line ends are accepted.
std::vector<text_example> read_examples(const std::string& path, text_task task);

class word_index {
 public:
  word_index() = default;
  explicit word_index(std::vector<std::string> words);
  int64_t find(const std::string& word) const;  // -1 when absent
  int64_t add(const std::string& word);         // its index, new or not
  // A new row for the word, which from now on maps to it (a fine-tuned copy of a pre-trained
  // row: the old row stays, unreachable by name). Returns the new index.
  int64_t add_row(const std::string& word);
  const std::vector<std::string>& words() const { return words_; }
  int64_t size() const { return static_cast<int64_t>(words_.size()); }  // rows
  int64_t distinct() const { return static_cast<int64_t>(index_.size()); }  // words

 private:
  std::vector<std::string> words_;
  std::unordered_map<std::string, int64_t> index_;
};

struct encoded_example {
  std::vector<int64_t> inputs;   // embedding rows of the known tokens
  std::vector<int64_t> outputs;  // next-word: each known token's output class (-1: none)
  int64_t label = -1;            // classify: the label's class (-1: unknown label)
  int64_t predictions() const;   // rows this example contributes to a batch
};

// What a line predicts: its label (classify), each next word (next-word), or nothing (a text a
// trained model reads: its inputs alone, no row scored).
enum class line_targets { label, next_words, none };
line_targets line_targets_of(text_task task);

// Unknown words are left out and counted in summary. With max_positions > 0 only the last
// max_positions known tokens are kept (the learned positions go no further).
encoded_example encode_example(const text_example& example, line_targets targets,
                               const word_index& inputs, const word_index& outputs,
                               int64_t max_positions, data_summary& summary);
inline encoded_example encode_example(const text_example& example, text_task task,
                                      const word_index& inputs, const word_index& outputs,
                                      int64_t max_positions, data_summary& summary) {
  return encode_example(example, line_targets_of(task), inputs, outputs, max_positions, summary);
}

// One row per line (its label) or per prefix (the next word after it); none: no row.
nn::batch make_batch(const std::vector<const encoded_example*>& examples, line_targets targets);
inline nn::batch make_batch(const std::vector<const encoded_example*>& examples, text_task task) {
  return make_batch(examples, line_targets_of(task));
}

}  // namespace attn::train
