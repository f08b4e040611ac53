// The language model's view of text (--task lm): each token is a vocabulary id (a word outside
// the vocabulary is the unknown token, never dropped), each paragraph ends with the
// end-of-paragraph token, the paragraphs run on as one stream, and the stream is cut into
// windows of `context` tokens whose every position predicts the token after it (GPT-2's and
// nanoGPT's training examples). A stream starts with the end token, as if a paragraph had
// just ended, so the first word of a text is predicted too.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "train/dataset.hpp"
#include "train/masking.hpp"

namespace attn::train {

// Never produced by attn::tokenize (it splits "<" off), so no text can spell them.
inline constexpr const char* unknown_token = "<unk>";
inline constexpr const char* end_token = "<eos>";

// Appends the paragraph's ids and the end token's; returns how many tokens were unknown.
int64_t append_paragraph(const std::vector<std::string>& tokens, const word_index& words,
                         std::vector<int64_t>& stream);

// The windows of a stream (n ids predict n − 1 targets): window k reads ids [kT, kT + T) and
// predicts ids [kT + 1, kT + T + 1); the last one may be shorter.
std::vector<masked_sequence> next_token_windows(const std::vector<int64_t>& stream, int64_t context);
int64_t count_windows(int64_t stream_ids, int64_t context);

}  // namespace attn::train
