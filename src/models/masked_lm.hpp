// The masked-word model (attn train --task masked-word, the context model `embed` reads): a word
// model (tied_lm.hpp) whose attention sees both sides, trained to name the hidden words. Its
// inference queries read its token vectors (embed), or score a position's words (predict).
#pragma once

#include "models/tied_lm.hpp"

namespace attn::models {

template <class T>
class masked_lm : public tied_lm<T> {
 public:
  using tied_lm<T>::tied_lm;
};

template <class T>
using masked_lm_cache = tied_lm_cache<T>;

}  // namespace attn::models
