// The held-out score of the streamed tasks (masked-word's hidden words, lm's next tokens): mean
// cross-entropy and top-1 accuracy over the predicted positions, through score_tally as every
// evaluation is.
#pragma once

#include <vector>

#include "models/network.hpp"
#include "train/masking.hpp"
#include "train/text_model_impl.hpp"

namespace attn::train {

class device_training;

// Groups of up to 64 sequences, fewer when their logits would pass max_scoring_logits (a
// 16k-word language model's 64 windows of 512 would be 2 GB).
// device: null, or the device the run trains on (its own weights score there).
scored_examples score_sequences(const models::network<float>& net, const std::vector<masked_sequence>& sequences,
                                device_training* device = nullptr);

}  // namespace attn::train
