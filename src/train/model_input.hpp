// A text as a trained model reads it: the known tokens, the words it has no embedding for, and
// the batch of one that the network's forward takes. Shared by predict, attention and embed.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "models/network.hpp"
#include "train/dataset.hpp"
#include "train/text_model_impl.hpp"

namespace attn::train {

// The whole text is one prefix or one sentence, pooled as a whole. For a masked-word model,
// "[MASK]" in the text (any case) is the hidden word's place: predict fills the first one.
struct model_input {
  std::vector<std::string> tokens, unknown;
  int64_t mask_position = -1;  // masked-word: the first [MASK]'s token index (-1: none)
  int64_t text_tokens = 0;     // the tokens the model would read before its context cut them
  encoded_example encoded;
  nn::batch batch;
};

// A text with no known word is a usage error.
model_input read_input(const text_model::impl& m, std::string_view text);

// The token a masked-word model's input table gives the hidden places (never produced by
// attn::tokenize, which splits "<" off).
inline constexpr const char* mask_token = "<mask>";

}  // namespace attn::train
