#include "text/text_tokenizer.hpp"

#include "attn/tokenizer.hpp"

namespace attn::text {

std::vector<std::string> text_tokenizer::tokens(std::string_view text) const {
  return pieces_ ? pieces_->pieces(text) : tokenize(text);
}

std::string text_tokenizer::writer::next(std::string_view token) {
  if (!pieces_) return words_.next(token);
  constexpr std::string_view space = "\xE2\x96\x81";  // U+2581, SentencePiece's word boundary
  std::string out;
  for (size_t i = 0; i < token.size();) {
    if (token.substr(i, space.size()) == space) {
      if (!first_) out += ' ';
      i += space.size();
    } else {
      out += token[i++];
    }
    first_ = false;
  }
  return out;
}

}  // namespace attn::text
