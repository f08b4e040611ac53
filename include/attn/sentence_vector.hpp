// One vector for a whole text from its token rows (attn embed --pool, TextModel.embed(pool=)):
// the sentence-transformers convention, whose default is the mean of the token rows, with
// unit length asked for separately (--normalize), as its normalize_embeddings does.
#pragma once

#include <string_view>
#include <vector>

#include "attn/tensor.hpp"

namespace attn {

enum class sentence_pool {
  mean,  // the average of the token rows (sentence-transformers' default)
  max,   // each dimension's largest value over the tokens
  cls,   // the first token's row (BERT's [CLS] place; attn models have no [CLS] token)
  last,  // the last token's row (a causal model's row that has read the whole text)
};

// "mean", "max", "cls" or "last"; anything else is a usage error naming the choices.
sentence_pool parse_sentence_pool(std::string_view name);
const char* sentence_pool_name(sentence_pool pool);

// rows [L, d] → [d]; with normalize, scaled to unit Euclidean length (a zero vector stays
// zero). L = 0 (no known token) gives an empty vector.
std::vector<float> pool_sentence(const tensor& rows, sentence_pool pool, bool normalize);

}  // namespace attn
