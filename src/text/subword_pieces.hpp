// Subword pieces (SentencePiece, Debian's libsentencepiece): a vocabulary of word pieces learned
// from the training text — BPE or unigram, cased, joint across languages when the text holds
// two — so that any word, seen or not, is a sequence of known pieces and nothing is <unk> but
// characters the text never showed. The learned model is a few hundred kilobytes of serialized
// bytes that an attn model file stores inside itself (one file is one model).
//
// Ids follow fairseq's and Marian's order: <pad> 0, <unk> 1, <s> 2, </s> 3, then the pieces.
// Text is normalised as SentencePiece does by default (NFKC, runs of spaces as one): decode(encode(t))
// is t for normalised text.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace attn::text {

enum class piece_kind { bpe, unigram };

struct piece_training {
  int64_t vocabulary = 8000;           // pieces, the four special ones included
  piece_kind kind = piece_kind::bpe;
  double character_coverage = 1.0;     // every character the text shows gets a piece
  int64_t max_sentence_bytes = 4192;   // longer lines are left out of the learning (SentencePiece's default)
};

// Learns pieces from the sentences (one thread: the same bytes on any machine). A vocabulary the
// text cannot fill is learned as large as it can be (see subword_pieces::size). A usage error
// when there is no text.
std::string learn_pieces(const std::vector<std::string>& sentences, const piece_training& options);

class subword_pieces {
 public:
  // From learn_pieces's bytes (or a model file's); an input error naming `source` when they are
  // not a SentencePiece model.
  subword_pieces(std::string serialized, const std::string& source = "pieces");
  ~subword_pieces();
  subword_pieces(subword_pieces&&) noexcept;
  subword_pieces& operator=(subword_pieces&&) noexcept;

  std::vector<int32_t> encode(std::string_view text) const;
  std::vector<std::string> pieces(std::string_view text) const;  // encode's pieces as text
  std::string decode(const std::vector<int32_t>& ids) const;     // specials left out
  int64_t size() const;
  const std::string& piece(int32_t id) const;
  const std::string& serialized() const { return serialized_; }

  static constexpr int32_t pad = 0, unknown = 1, begin = 2, end = 3;

 private:
  std::unique_ptr<sentencepiece::SentencePieceProcessor> processor_;
  std::string serialized_;
};

}  // namespace attn::text
