// A small tokenizer that approximates what GloVe 6B was trained on (Stanford CoreNLP's Penn
// Treebank tokenizer, lowercased), so that most tokens find a vector. The rules:
//  - Letters are lowercased by Unicode's simple mapping for Latin, Greek and Cyrillic ("CAFÉ" →
//    "café", "МОСКВА" → "москва"; text/lowercase.hpp); other UTF-8 bytes are kept as they are.
//  - Whitespace (ASCII, and U+00A0) separates tokens; control characters count as whitespace.
//  - Curly quotes are normalised first: ’ ‘ → ' (so "it’s" splits like "it's") and “ ” → ".
//  - Punctuation and symbols are tokens of their own: . , ; : ! ? ( ) [ ] { } " ` ' / \ * & % $
//    # @ + = < > | ~ ^ _, and the non-ASCII … — – « » £ € ¥.
//  - Clitics split as in the Penn Treebank: "didn't" → did n't, "can't" → ca n't, "won't" →
//    wo n't; 's 're 've 'll 'd 'm split off ("it's" → it 's). Other inner apostrophes stay
//    ("o'neill"); a quote around a word is its own token.
//  - Hyphenated words stay whole ("well-known"); a lone, leading or trailing - or -- does not.
//  - Numbers keep inner . and , ("3.14", "1,000"; ".5" too); two or more dots are one token
//    ("...").
//  - Dotted abbreviations of single letters keep their dots ("u.s.", "e.g."), as GloVe has them.
// CoreNLP writes quotes as `` and ''; GloVe 6B has those too, but " is the more common token, so
// " is what we emit.
#include "attn/tokenizer.hpp"

#include <cstring>

#include "text/lowercase.hpp"

namespace attn {

namespace {

bool is_ascii_alnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// Non-ASCII punctuation that is a token of its own (UTF-8).
constexpr const char* separate_symbols[] = {"…", "—", "–", "«", "»", "£", "€", "¥"};

// The byte length of a separate symbol starting at i, or 0.
size_t symbol_length(std::string_view s, size_t i) {
  for (const char* symbol : separate_symbols) {
    const std::string_view sym(symbol);
    if (s.substr(i, sym.size()) == sym) return sym.size();
  }
  return 0;
}

// Letters, digits and non-ASCII bytes other than the separate symbols.
bool is_word_at(std::string_view s, size_t i) {
  if (i >= s.size()) return false;
  const char c = s[i];
  if (is_ascii_alnum(c)) return true;
  return static_cast<unsigned char>(c) >= 0x80 && symbol_length(s, i) == 0;
}

// Turns curly quotes into ASCII ones and odd spaces into ' ' (after lowercasing).
std::string normalise(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const std::string_view rest = text.substr(i);
    if (rest.starts_with("\u2019") || rest.starts_with("\u2018")) {
      out.push_back('\'');
      i += 2;
    } else if (rest.starts_with("\u201C") || rest.starts_with("\u201D")) {
      out.push_back('"');
      i += 2;
    } else if (rest.starts_with("\u00A0")) {
      out.push_back(' ');
      i += 1;
    } else {
      const char c = text[i];
      const auto u = static_cast<unsigned char>(c);
      out.push_back(u < 0x20 || u == 0x7F ? ' ' : c);
    }
  }
  return out;
}

// The length of a clitic (s, re, ve, ll, d, m) that follows an apostrophe at i - 1 and ends
// the word, or 0.
size_t clitic_length(std::string_view s, size_t i) {
  for (std::string_view clitic : {"s", "re", "ve", "ll", "d", "m"}) {
    if (s.substr(i, clitic.size()) == clitic && !is_word_at(s, i + clitic.size()))
      return clitic.size();
  }
  return 0;
}

// Whether s[begin, end) is single letters joined by dots ("u", "u.s", "e.g").
bool is_dotted_letters(std::string_view s, size_t begin, size_t end) {
  if (end <= begin || (end - begin) % 2 == 0) return false;
  for (size_t i = begin; i < end; ++i)
    if ((i - begin) % 2 == 0 ? !is_letter(s[i]) : s[i] != '.') return false;
  return true;
}

class scanner {
 public:
  explicit scanner(std::string text) : s_(std::move(text)) {}

  std::vector<std::string> run() {
    while (i_ < s_.size()) step();
    return std::move(tokens_);
  }

 private:
  void emit(size_t begin, size_t end) { tokens_.emplace_back(s_.substr(begin, end - begin)); }

  size_t run_of(char c) const {
    size_t j = i_;
    while (j < s_.size() && s_[j] == c) ++j;
    return j - i_;
  }

  void step() {
    const char c = s_[i_];
    if (c == ' ') {
      ++i_;
    } else if (const size_t symbol = symbol_length(s_, i_)) {
      emit(i_, i_ + symbol);
      i_ += symbol;
    } else if (c == '.' && run_of('.') >= 2) {
      const size_t n = run_of('.');
      emit(i_, i_ + n);
      i_ += n;
    } else if (c == '.' && i_ + 1 < s_.size() && is_digit(s_[i_ + 1]) &&
               (i_ == 0 || !is_word_at(s_, i_ - 1))) {
      word();  // ".5"
    } else if (c == '-') {
      // Hyphens inside a word are taken by word(); here they start or stand alone.
      const size_t n = run_of('-');
      emit(i_, i_ + n);
      i_ += n;
    } else if (c == '\'') {
      const size_t clitic = clitic_length(s_, i_ + 1);
      emit(i_, i_ + 1 + clitic);
      i_ += 1 + clitic;
    } else if (!is_word_at(s_, i_)) {
      emit(i_, i_ + 1);  // any other ASCII punctuation or symbol
      ++i_;
    } else {
      word();
    }
  }

  // A word from i_: letters, digits and other-script bytes, with the joiners described at the
  // top of this file.
  void word() {
    const size_t begin = i_;
    size_t j = i_ + 1;  // s_[begin] is a word byte or the '.' of ".5"
    for (;;) {
      if (is_word_at(s_, j)) {
        ++j;
        continue;
      }
      if (j >= s_.size()) break;
      const char c = s_[j];
      if (c == '-' && is_word_at(s_, j - 1) && is_word_at(s_, j + 1)) {
        j += 1;
        continue;
      }
      if ((c == '.' || c == ',') && is_digit(s_[j - 1]) && j + 1 < s_.size() &&
          is_digit(s_[j + 1])) {
        j += 1;
        continue;
      }
      if (c == '.' && is_dotted_letters(s_, begin, j)) {
        if (j + 2 < s_.size() && is_letter(s_[j + 1]) && s_[j + 2] == '.') {
          j += 2;  // ".s" of "u.s."; the loop comes back to the next dot
          continue;
        }
        if (j - begin >= 3) ++j;  // the final dot of "u.s." (but not the period after "a")
        break;
      }
      if (c == '\'') {
        // "n't": the n belongs to the clitic ("did" "n't", "ca" "n't").
        if (s_[j - 1] == 'n' && j - 1 > begin && j + 1 < s_.size() && s_[j + 1] == 't' &&
            !is_word_at(s_, j + 2)) {
          emit(begin, j - 1);
          emit(j - 1, j + 2);
          i_ = j + 2;
          return;
        }
        if (clitic_length(s_, j + 1) == 0 && is_word_at(s_, j + 1)) {
          j += 1;  // o'neill
          continue;
        }
      }
      break;
    }
    emit(begin, j);
    i_ = j;
  }

  std::string s_;
  size_t i_ = 0;
  std::vector<std::string> tokens_;
};

}  // namespace

std::vector<std::string> tokenize(std::string_view text) {
  return scanner(normalise(text::lowercase(text))).run();
}

bool is_word_token(std::string_view token) {
  for (size_t i = 0; i < token.size();) {
    if (const size_t symbol = symbol_length(token, i); symbol > 0) {
      i += symbol;  // a symbol's bytes are not letters, though they are past ASCII
      continue;
    }
    if (is_word_at(token, i)) return true;
    ++i;
  }
  return false;
}

}  // namespace attn
