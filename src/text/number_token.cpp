#include "text/number_token.hpp"

#include <cstddef>

namespace attn::text {

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

size_t digits_from(std::string_view s, size_t i) {
  size_t j = i;
  while (j < s.size() && is_digit(s[j])) ++j;
  return j - i;
}

}  // namespace

bool is_number(std::string_view token) {
  size_t i = 0;
  if (i < token.size() && (token[i] == '+' || token[i] == '-')) ++i;
  const size_t whole = digits_from(token, i);
  i += whole;
  // Thousands commas only after 1 to 3 leading digits, each followed by exactly 3 digits.
  if (whole >= 1 && whole <= 3)
    while (i < token.size() && token[i] == ',' && digits_from(token, i + 1) == 3) i += 4;
  size_t fraction = 0;
  if (i < token.size() && token[i] == '.') {
    fraction = digits_from(token, i + 1);
    if (fraction == 0) return false;
    i += 1 + fraction;
  }
  return (whole > 0 || fraction > 0) && i == token.size();
}

}  // namespace attn::text
