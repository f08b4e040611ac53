// A masked-word model scored on a text file (attn eval): every k-th word hidden, the share of
// them the model puts first (top-1) and among its first five (top-5).
#pragma once

#include <cstdint>
#include <string>

#include "attn/text_model.hpp"
#include "train/text_model_impl.hpp"

namespace attn::train {

// The file (plain, .xz or .gz; streamed) is read as training reads it: sentences, cut at the
// model's positions, words the model has no row for left out. Over the words that remain,
// counted through the whole file, word i is hidden when (i + offset) % every == 0, the offset
// drawn from the seed; each hidden word is replaced by the mask token (no random or kept
// words: this is the cloze test) and predicted from the rest of its sentence. A hidden word
// the model cannot output counts as wrong; the loss is over the others.
evaluation evaluate_masked_words(const text_model::impl& m, const std::string& path, int64_t every,
                                 uint64_t seed);

}  // namespace attn::train
