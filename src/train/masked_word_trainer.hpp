// attn::train_text_model for the masked-word task (no labels): see masked_word_trainer.cpp.
#pragma once

#include "attn/train.hpp"

namespace attn::train {

train_result train_masked_word(const train_options& o, const train_callbacks& cb);

}  // namespace attn::train
