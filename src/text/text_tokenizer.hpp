// How a text model cuts text into tokens, and writes tokens back as text: attn::tokenize's
// lowercased words (the vocabulary of GloVe, the default vectors), or cased subword pieces
// learned from the training text (subword_pieces.hpp; attn train --task lm --pieces N), whose
// piece strings ("▁The", "cat") are the tokens a vocabulary indexes.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "attn/detokenize.hpp"
#include "text/subword_pieces.hpp"

namespace attn::text {

class text_tokenizer {
 public:
  text_tokenizer() = default;  // words
  explicit text_tokenizer(std::shared_ptr<const subword_pieces> pieces) : pieces_(std::move(pieces)) {}

  std::vector<std::string> tokens(std::string_view text) const;
  const subword_pieces* pieces() const { return pieces_.get(); }

  // Tokens as readable text, one at a time (so generated text can be printed as it comes):
  // words through attn::detokenizer; pieces with each "▁" a space, none before the first.
  class writer {
   public:
    explicit writer(bool pieces) : pieces_(pieces) {}
    std::string next(std::string_view token);

   private:
    bool pieces_;
    bool first_ = true;
    detokenizer words_;
  };
  writer text_writer() const { return writer(pieces_ != nullptr); }

 private:
  std::shared_ptr<const subword_pieces> pieces_;
};

}  // namespace attn::text
