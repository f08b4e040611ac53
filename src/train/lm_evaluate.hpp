// A language model scored on a text file (attn eval): perplexity over every token.
#pragma once

#include <string>

#include "attn/text_model.hpp"
#include "train/text_model_impl.hpp"

namespace attn::train {

// The file's paragraphs (plain, .xz or .gz; one a line) as one stream (lm_stream.hpp), cut into
// non-overlapping windows of the model's context, each scored from its own start, as training
// cut them; the file is streamed, so it may be larger than memory.
evaluation evaluate_lm(const text_model::impl& m, const std::string& path);

}  // namespace attn::train
