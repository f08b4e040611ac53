// Tokens back into readable text: attn::tokenize's tokens (lowercased, punctuation and clitics
// split off) joined with spaces except where written English has none: before closing
// punctuation and clitics ("word ." → "word.", "did n't" → "didn't"), after opening brackets,
// inside quotes. The first letter of each sentence and the word "i" are capitalised (the
// tokenizer lowercased them). Incremental, so generated words can be printed as they come.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace attn {

class detokenizer {
 public:
  // The text to append for the next token (a leading space where one belongs).
  std::string next(std::string_view token);

 private:
  bool first_ = true, sentence_start_ = true, no_space_next_ = false;
  bool double_quote_open_ = false;
};

std::string detokenize(const std::vector<std::string>& tokens);

}  // namespace attn
