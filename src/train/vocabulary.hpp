// Every task's vocabulary, in one place: the words counted most frequent first (ties
// alphabetical), then the input rows (pre-trained vectors' rows, learned rows for the words they
// lack, fine-tuned copies) and the output words or labels each task predicts.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "attn/train.hpp"
#include "train/corpus_survey.hpp"
#include "train/dataset.hpp"

namespace attn::train {

// Words by count, most frequent first (ties alphabetical).
std::vector<std::pair<std::string, int64_t>> words_by_count(const std::unordered_map<std::string, int64_t>& counts);

struct vocabulary {
  word_index inputs, outputs;
  int64_t new_words = 0;  // how many of the last input rows are learned (new words and tuned ones)
  int64_t tuned = 0;      // of those, fine-tuned copies of default vectors
};

// classify and next-word: the words with an embedding (every word of the default vectors, or the
// data's words with a pre-trained vector, or with learned embeddings the training words), then
// learned rows (see the definition). Outputs are left to examples_output_words.
vocabulary examples_input_words(const train_options& o, const std::vector<text_example>& train_set,
                                const std::vector<text_example>& valid_set);
// next-word: the training data's words with a row, most frequent first; classify: the labels,
// alphabetical.
word_index examples_output_words(text_task task, const std::vector<text_example>& set, const word_index& inputs);

// masked-word: the vectors' rows, learned rows, the mask token; outputs: the most frequent corpus
// words with a row, at most max_outputs.
vocabulary masked_word_vocabulary(const train_options& o, const survey& s);

// lm --frozen-embeddings: the word vectors' rows stay as they are (words without one, <unk> and
// <eos> learn theirs), so a small text trains the layers and not a table it is too short for.
bool lm_rows_frozen(const train_options& o);
// lm: the most frequent words, <unk> and <eos>, each row both an input and an output.
vocabulary lm_vocabulary(const train_options& o, const survey& s);

}  // namespace attn::train
