// The simple lowercase mapping as range rules, checked against Python's str.lower() over every
// code point they cover (tests/cli/test_case_folding.py).
#include "text/lowercase.hpp"

#include <algorithm>
#include <array>
#include <cstdint>

namespace attn::text {

namespace {

// every: each code point in [first, last] maps to itself + delta; alternate: only first,
// first + 2, … do (upper and lower case interleave there), the others are already lowercase.
enum step : uint8_t { every, alternate };

struct rule {
  char32_t first, last;
  int32_t delta;
  step kind;
};

// Sorted and disjoint. ASCII is handled before the table is consulted.
constexpr auto rules = std::to_array<rule>({
    // Latin-1 Supplement
    {0x00C0, 0x00D6, 32, every},  // À→à … Ö→ö
    {0x00D8, 0x00DE, 32, every},  // Ø→ø … Þ→þ
    // Latin Extended-A
    {0x0100, 0x012E, 1, alternate},  // Ā→ā … Į→į
    {0x0130, 0x0130, -199, every},   // İ→i
    {0x0132, 0x0136, 1, alternate},  // Ĳ→ĳ … Ķ→ķ
    {0x0139, 0x0147, 1, alternate},  // Ĺ→ĺ … Ň→ň
    {0x014A, 0x0176, 1, alternate},  // Ŋ→ŋ … Ŷ→ŷ
    {0x0178, 0x0178, -121, every},   // Ÿ→ÿ
    {0x0179, 0x017D, 1, alternate},  // Ź→ź … Ž→ž
    // Latin Extended-B
    {0x0181, 0x0181, 210, every},    // Ɓ→ɓ
    {0x0182, 0x0184, 1, alternate},  // Ƃ→ƃ … Ƅ→ƅ
    {0x0186, 0x0186, 206, every},    // Ɔ→ɔ
    {0x0187, 0x0187, 1, alternate},  // Ƈ→ƈ
    {0x0189, 0x018A, 205, every},    // Ɖ→ɖ … Ɗ→ɗ
    {0x018B, 0x018B, 1, alternate},  // Ƌ→ƌ
    {0x018E, 0x018E, 79, every},     // Ǝ→ǝ
    {0x018F, 0x018F, 202, every},    // Ə→ə
    {0x0190, 0x0190, 203, every},    // Ɛ→ɛ
    {0x0191, 0x0191, 1, alternate},  // Ƒ→ƒ
    {0x0193, 0x0193, 205, every},    // Ɠ→ɠ
    {0x0194, 0x0194, 207, every},    // Ɣ→ɣ
    {0x0196, 0x0196, 211, every},    // Ɩ→ɩ
    {0x0197, 0x0197, 209, every},    // Ɨ→ɨ
    {0x0198, 0x0198, 1, alternate},  // Ƙ→ƙ
    {0x019C, 0x019C, 211, every},    // Ɯ→ɯ
    {0x019D, 0x019D, 213, every},    // Ɲ→ɲ
    {0x019F, 0x019F, 214, every},    // Ɵ→ɵ
    {0x01A0, 0x01A4, 1, alternate},  // Ơ→ơ … Ƥ→ƥ
    {0x01A6, 0x01A6, 218, every},    // Ʀ→ʀ
    {0x01A7, 0x01A7, 1, alternate},  // Ƨ→ƨ
    {0x01A9, 0x01A9, 218, every},    // Ʃ→ʃ
    {0x01AC, 0x01AC, 1, alternate},  // Ƭ→ƭ
    {0x01AE, 0x01AE, 218, every},    // Ʈ→ʈ
    {0x01AF, 0x01AF, 1, alternate},  // Ư→ư
    {0x01B1, 0x01B2, 217, every},    // Ʊ→ʊ … Ʋ→ʋ
    {0x01B3, 0x01B5, 1, alternate},  // Ƴ→ƴ … Ƶ→ƶ
    {0x01B7, 0x01B7, 219, every},    // Ʒ→ʒ
    {0x01B8, 0x01B8, 1, alternate},  // Ƹ→ƹ
    {0x01BC, 0x01BC, 1, alternate},  // Ƽ→ƽ
    {0x01C4, 0x01C4, 2, every},      // Ǆ→ǆ
    {0x01C5, 0x01C5, 1, alternate},  // ǅ→ǆ
    {0x01C7, 0x01C7, 2, every},      // Ǉ→ǉ
    {0x01C8, 0x01C8, 1, alternate},  // ǈ→ǉ
    {0x01CA, 0x01CA, 2, every},      // Ǌ→ǌ
    {0x01CB, 0x01DB, 1, alternate},  // ǋ→ǌ … Ǜ→ǜ
    {0x01DE, 0x01EE, 1, alternate},  // Ǟ→ǟ … Ǯ→ǯ
    {0x01F1, 0x01F1, 2, every},      // Ǳ→ǳ
    {0x01F2, 0x01F4, 1, alternate},  // ǲ→ǳ … Ǵ→ǵ
    {0x01F6, 0x01F6, -97, every},    // Ƕ→ƕ
    {0x01F7, 0x01F7, -56, every},    // Ƿ→ƿ
    {0x01F8, 0x021E, 1, alternate},  // Ǹ→ǹ … Ȟ→ȟ
    {0x0220, 0x0220, -130, every},   // Ƞ→ƞ
    {0x0222, 0x0232, 1, alternate},  // Ȣ→ȣ … Ȳ→ȳ
    {0x023B, 0x023B, 1, alternate},  // Ȼ→ȼ
    {0x023D, 0x023D, -163, every},   // Ƚ→ƚ
    {0x0241, 0x0241, 1, alternate},  // Ɂ→ɂ
    {0x0243, 0x0243, -195, every},   // Ƀ→ƀ
    {0x0244, 0x0244, 69, every},     // Ʉ→ʉ
    {0x0245, 0x0245, 71, every},     // Ʌ→ʌ
    {0x0246, 0x024E, 1, alternate},  // Ɇ→ɇ … Ɏ→ɏ
    // Greek and Coptic
    {0x0370, 0x0372, 1, alternate},  // Ͱ→ͱ … Ͳ→ͳ
    {0x0376, 0x0376, 1, alternate},  // Ͷ→ͷ
    {0x037F, 0x037F, 116, every},    // Ϳ→ϳ
    {0x0386, 0x0386, 38, every},     // Ά→ά
    {0x0388, 0x038A, 37, every},     // Έ→έ … Ί→ί
    {0x038C, 0x038C, 64, every},     // Ό→ό
    {0x038E, 0x038F, 63, every},     // Ύ→ύ … Ώ→ώ
    {0x0391, 0x03A1, 32, every},     // Α→α … Ρ→ρ
    {0x03A3, 0x03AB, 32, every},     // Σ→σ … Ϋ→ϋ
    {0x03CF, 0x03CF, 8, every},      // Ϗ→ϗ
    {0x03D8, 0x03EE, 1, alternate},  // Ϙ→ϙ … Ϯ→ϯ
    {0x03F4, 0x03F4, -60, every},    // ϴ→θ
    {0x03F7, 0x03F7, 1, alternate},  // Ϸ→ϸ
    {0x03F9, 0x03F9, -7, every},     // Ϲ→ϲ
    {0x03FA, 0x03FA, 1, alternate},  // Ϻ→ϻ
    {0x03FD, 0x03FF, -130, every},   // Ͻ→ͻ … Ͽ→ͽ
    // Cyrillic
    {0x0400, 0x040F, 80, every},     // Ѐ→ѐ … Џ→џ
    {0x0410, 0x042F, 32, every},     // А→а … Я→я
    {0x0460, 0x0480, 1, alternate},  // Ѡ→ѡ … Ҁ→ҁ
    {0x048A, 0x04BE, 1, alternate},  // Ҋ→ҋ … Ҿ→ҿ
    {0x04C0, 0x04C0, 15, every},     // Ӏ→ӏ
    {0x04C1, 0x04CD, 1, alternate},  // Ӂ→ӂ … Ӎ→ӎ
    {0x04D0, 0x052E, 1, alternate},  // Ӑ→ӑ … Ԯ→ԯ
                                     // Cyrillic Supplement
});

// Every rule maps two-byte UTF-8 (U+0080 … U+07FF) to one or two bytes, which is what keeps
// lowercase() from lengthening a text.
constexpr bool stays_within_two_bytes() {
  char32_t previous_last = 0x7F;
  for (const rule& r : rules) {
    const auto lowest = static_cast<int64_t>(r.first) + r.delta;
    const auto highest = static_cast<int64_t>(r.last) + r.delta;
    if (r.first <= previous_last || r.last < r.first || r.last > 0x7FF || lowest < 0 ||
        highest > 0x7FF)
      return false;
    previous_last = r.last;
  }
  return true;
}
static_assert(stays_within_two_bytes(), "rules must be sorted, disjoint and within U+0080…U+07FF");

}  // namespace

char32_t simple_lowercase(char32_t c) {
  if (c >= U'A' && c <= U'Z') return c + (U'a' - U'A');
  // The last rule starting at or before c.
  auto it = std::upper_bound(rules.begin(), rules.end(), c,
                             [](char32_t x, const rule& r) { return x < r.first; });
  if (it == rules.begin()) return c;
  const rule& r = *--it;
  if (c > r.last || (r.kind == alternate && (c - r.first) % 2 != 0)) return c;
  return static_cast<char32_t>(static_cast<int32_t>(c) + r.delta);
}

std::string lowercase(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const auto lead = static_cast<unsigned char>(text[i]);
    if (lead < 0x80) {
      out.push_back(static_cast<char>(simple_lowercase(lead)));
      continue;
    }
    // Every mapped letter is two bytes long (C2…DF, then 80…BF); any other byte, valid or not,
    // is copied (a continuation byte is never C2…DF, so no sequence is misread).
    const auto next = i + 1 < text.size() ? static_cast<unsigned char>(text[i + 1]) : 0u;
    if (lead < 0xC2 || lead > 0xDF || (next & 0xC0u) != 0x80) {
      out.push_back(text[i]);
      continue;
    }
    const char32_t lower =
        simple_lowercase(static_cast<char32_t>((lead & 0x1Fu) << 6 | (next & 0x3Fu)));
    if (lower < 0x80) {
      out.push_back(static_cast<char>(lower));
    } else {
      out.push_back(static_cast<char>(0xC0u | lower >> 6));
      out.push_back(static_cast<char>(0x80u | (lower & 0x3Fu)));
    }
    ++i;
  }
  return out;
}

}  // namespace attn::text
