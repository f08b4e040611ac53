// The language model (attn train --task lm): a word model (tied_lm.hpp) with causal attention
// (token t sees tokens ≤ t), trained on the next word at every position. It is the one
// autoregressive model: generation runs it one token at a time (nn::causal_decoder, the encoder
// block's one-row path, wrapped for src/decode/ by causal_lm_decoding).
#pragma once

#include "models/tied_lm.hpp"

namespace attn::models {

template <class T>
class causal_lm : public tied_lm<T> {
 public:
  using tied_lm<T>::tied_lm;
};

template <class T>
using causal_lm_cache = tied_lm_cache<T>;

}  // namespace attn::models
