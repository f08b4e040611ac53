#include "train/vocabulary.hpp"

#include <algorithm>
#include <map>

#include "train/lm_stream.hpp"
#include "train/masking.hpp"
#include "train/model_input.hpp"
#include "train/trainer_parts.hpp"

namespace attn::train {

std::vector<std::pair<std::string, int64_t>> words_by_count(const std::unordered_map<std::string, int64_t>& counts) {
  std::vector<std::pair<std::string, int64_t>> sorted(counts.begin(), counts.end());
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  return sorted;
}

// The words with an embedding: every word of the default vectors (they are in the binary, so
// predict can use words never seen in training), or the data's words with a pre-trained vector,
// or (learned embeddings) the training words; then learned rows: the training words that have
// no pre-trained vector but occur at least min_count times, and, fine-tuning the default
// vectors, a trainable copy of each training word's vector.
vocabulary examples_input_words(const train_options& o, const std::vector<text_example>& train_set,
                                const std::vector<text_example>& valid_set) {
  vocabulary v;
  std::unordered_map<std::string, int64_t> counted;
  for (const text_example& ex : train_set)
    for (const std::string& t : ex.tokens) counted[t] += 1;
  const auto counts = words_by_count(counted);
  if (o.word_vectors == nullptr) {
    for (const auto& [w, n] : counts)
      if (n >= std::max<int64_t>(o.min_count, 1)) v.inputs.add(w);
    return v;
  }
  if (uses_default_vectors(o)) {
    for (int64_t i = 0; i < o.word_vectors->size(); ++i)
      v.inputs.add(std::string(o.word_vectors->word(i)));
  } else {
    // Pre-trained vectors of the validation words are real, so they join the table too.
    for (const auto* set : {&train_set, &valid_set})
      for (const text_example& ex : *set)
        for (const std::string& t : ex.tokens)
          if (o.word_vectors->find(t)) v.inputs.add(t);
  }
  const int64_t table = v.inputs.size();
  v.tuned = add_learned_rows(o, counts, v.inputs);
  v.new_words = v.inputs.size() - table;
  return v;
}

// next-word: the training data's words, most frequent first (ties alphabetical); classify: the
// labels, alphabetical.
word_index examples_output_words(text_task task, const std::vector<text_example>& set,
                                 const word_index& inputs) {
  std::map<std::string, int64_t> counts;
  for (const text_example& ex : set) {
    if (kind_of(task).labelled) {
      counts[ex.label] += 1;
      continue;
    }
    for (const std::string& t : ex.tokens)
      if (inputs.find(t) >= 0) counts[t] += 1;
  }
  std::vector<std::pair<std::string, int64_t>> sorted(counts.begin(), counts.end());
  if (kind_of(task).every_prefix)
    std::stable_sort(sorted.begin(), sorted.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
  word_index out;
  for (const auto& [w, n] : sorted) out.add(w);
  return out;
}

// Inputs: the word vectors' rows (all of the embedded default's; the corpus words' of another
// table; with learned embeddings, the words seen min_count times), then learned rows for the
// words the vectors lack (min_count times or more), fine-tuned copies when asked, and the mask
// token. Outputs: the most frequent corpus words with a row, at most max_outputs.
vocabulary masked_word_vocabulary(const train_options& o, const survey& s) {
  vocabulary v;
  const auto sorted = words_by_count(s.counts);
  if (o.word_vectors == nullptr) {
    for (const auto& [w, n] : sorted)
      if (n >= std::max<int64_t>(o.min_count, 1)) v.inputs.add(w);
  } else if (uses_default_vectors(o)) {
    for (int64_t i = 0; i < o.word_vectors->size(); ++i) v.inputs.add(std::string(o.word_vectors->word(i)));
  } else {
    for (const auto& [w, n] : sorted)
      if (o.word_vectors->find(w)) v.inputs.add(w);
    for (const auto& seq : s.valid)
      for (const std::string& t : seq)
        if (o.word_vectors->find(t)) v.inputs.add(t);
  }
  const int64_t table = o.word_vectors == nullptr ? v.inputs.size() + 1 : v.inputs.size();
  if (o.word_vectors == nullptr) {
    v.inputs.add(mask_token);  // a table row like the others
  } else {
    v.tuned = add_learned_rows(o, sorted, v.inputs);
    v.inputs.add(mask_token);
    v.new_words = v.inputs.size() - table;
  }
  for (const auto& [w, n] : sorted) {
    if (v.outputs.size() >= o.max_outputs) break;
    if (v.inputs.find(w) >= 0 && w != mask_token) v.outputs.add(w);
  }
  return v;
}

// lm: the `vocab` most frequent training words seen at least min_count times (the rarer are
// <unk>, so <unk> is a target in training too), the unknown token and the end token, each row
// both an input and an output (the same order, so class c is row c).
// With frozen word vectors the words that have one come first (the frozen table), then learned
// rows for the others and the two tokens (new_words).
vocabulary lm_vocabulary(const train_options& o, const survey& s) {
  std::vector<std::string> words;
  const bool pieces = s.tokenizer.pieces() != nullptr;  // every piece the text uses: --vocab and
                                                        // --min-count are for words
  for (const auto& [w, n] : words_by_count(s.counts)) {
    if (pieces) {
      words.push_back(w);
      continue;
    }
    // by_count is most frequent first: the rest are rarer still
    if (static_cast<int64_t>(words.size()) >= o.vocab || n < std::max<int64_t>(o.min_count, 1)) break;
    words.push_back(w);
  }
  vocabulary v;
  const bool frozen = lm_rows_frozen(o);
  for (const std::string& w : words)
    if (!frozen || o.word_vectors->find(w)) v.inputs.add(w);
  const int64_t table = v.inputs.size();
  for (const std::string& w : words)
    if (frozen && !o.word_vectors->find(w)) v.inputs.add(w);
  v.inputs.add(unknown_token);
  v.inputs.add(end_token);
  v.new_words = frozen ? v.inputs.size() - table : 0;
  v.outputs = v.inputs;
  return v;
}

bool lm_rows_frozen(const train_options& o) { return o.word_vectors != nullptr && !o.finetune_embeddings; }

}  // namespace attn::train
