// lm --pieces N: subword pieces learned from the corpus before its survey, so that the survey,
// the vocabulary and the batches read pieces where they would read words (corpus_reader with a
// text_tokenizer). The pieces learn from the corpus's first piece_sample_bytes of text (all of a
// small one): SentencePiece's trainer holds its text in memory and runs on one thread, so a
// larger sample would cost minutes of an hour's run for pieces that barely change.
#pragma once

#include <cstdint>

#include "attn/train.hpp"
#include "text/text_tokenizer.hpp"

namespace attn::train {

inline constexpr int64_t piece_sample_bytes = int64_t{16} << 20;
// Pieces have no pre-trained vectors: a pieces model learns its embeddings, this wide unless
// --dim says otherwise.
inline constexpr int64_t piece_embedding_width = 256;

// The corpus's pieces (o.pieces of them at most), learned on one thread: the same pieces on
// any machine, so a resumed run learns the ones it started with. Input errors as the corpus
// reader's (a line of invalid UTF-8 names its line).
text::text_tokenizer learn_corpus_pieces(const train_options& o);

}  // namespace attn::train
