// The seeds' pipeline from text to contextual embeddings:
//   text → tokens → static vectors E [N, d] → basic self-attention → C [N, d]
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "attn/scale.hpp"
#include "attn/self_attention.hpp"
#include "attn/vectors.hpp"

namespace attn {

struct embed_options {
  scale_spec scale = {};
  bool strict = false;  // unknown tokens are an error instead of being left out
  // Keep the steps before C (S, the scaled S and A: N × N each), computed in float64 one row
  // at a time, as explain shows them and the JSON "attention" field prints A. C itself always
  // comes from sdpa's fused kernel (float32, the tiled online softmax; within float32 rounding of
  // the float64 A·E), so without the steps memory is linear in N and a long text's embeddings
  // need no N × N matrix (steps.scores, scaled and weights then stay empty).
  bool keep_steps = true;
};

struct embedding {
  std::vector<std::string> tokens;   // the tokens that took part, lowercased, in order
  std::vector<std::string> unknown;  // tokens not in the vocabulary, left out of attention
  tensor static_vectors;             // E [N, d]
  self_attention_steps steps;        // S, scaled S, A (float64, with keep_steps), C (fused)
};

// Throws a usage error when no token of the text is in the vocabulary, and (strict) when any is
// unknown.
embedding embed(std::string_view text, const vectors& vocab, const embed_options& options = {});

}  // namespace attn
