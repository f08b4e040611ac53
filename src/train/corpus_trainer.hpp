// attn::train_text_model for the tasks that stream plain text (no labels): masked-word and lm.
// See corpus_trainer.cpp.
#pragma once

#include "attn/train.hpp"

namespace attn::train {

train_result train_from_corpus(const train_options& o, const train_callbacks& cb);

}  // namespace attn::train
