#include "attn/detokenize.hpp"

#include <algorithm>
#include <array>

namespace attn {

namespace {

bool one_of(std::string_view token, std::initializer_list<std::string_view> set) {
  return std::find(set.begin(), set.end(), token) != set.end();
}

// Written against the word before: closing punctuation and the Penn Treebank clitics.
bool attaches_left(std::string_view t) {
  return one_of(t, {".", ",", ";", ":", "!", "?", ")", "]", "}", "%", "...", "'s", "'re", "'ve", "'ll",
                    "'d", "'m", "n't", "'"});
}

bool opens(std::string_view t) { return one_of(t, {"(", "[", "{", "$", "#"}); }

std::string capitalised(std::string_view t) {
  std::string s(t);
  if (!s.empty() && s[0] >= 'a' && s[0] <= 'z') s[0] = static_cast<char>(s[0] - 'a' + 'A');
  return s;
}

}  // namespace

std::string detokenizer::next(std::string_view token) {
  std::string out;
  bool space = !first_ && !no_space_next_ && !attaches_left(token);
  bool opening_quote = false;
  if (token == "\"") {  // quotes alternate: an opening one takes a space before, a closing one not
    opening_quote = !double_quote_open_;
    double_quote_open_ = !double_quote_open_;
    space = !first_ && !no_space_next_ && opening_quote;
  }
  if (space) out += ' ';
  const bool word = !token.empty() && ((token[0] >= 'a' && token[0] <= 'z') || (token[0] >= '0' && token[0] <= '9'));
  out += (sentence_start_ && word) || token == "i" ? capitalised(token) : std::string(token);
  if (word) sentence_start_ = false;
  if (one_of(token, {".", "!", "?"})) sentence_start_ = true;
  no_space_next_ = opens(token) || opening_quote;
  first_ = false;
  return out;
}

std::string detokenize(const std::vector<std::string>& tokens) {
  detokenizer d;
  std::string text;
  for (const std::string& t : tokens) text += d.next(t);
  return text;
}

}  // namespace attn
