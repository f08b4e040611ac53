// Checks an .attnvec file (layout in attnvec_format.hpp) before anything is read from it: every
// header field, the sizes with checked arithmetic, the word table, and the exact file size, so a
// damaged file fails with one message instead of reading out of bounds.
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>

#include "attn/error.hpp"
#include "io/attnvec_format.hpp"
#include "io/vectors_readers.hpp"

namespace attn::io {

namespace {

constexpr uint64_t max_count = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());

uint64_t load_le(const unsigned char* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

std::string at_byte(uint64_t offset) { return fmt::format("byte {}", offset); }

}  // namespace

attnvec_contents read_attnvec(std::span<const unsigned char> bytes, const std::string& source) {
  const uint64_t size = bytes.size();
  const unsigned char* p = bytes.data();
  if (size < sizeof attnvec::magic || std::memcmp(p, attnvec::magic, sizeof attnvec::magic) != 0)
    throw_input(source, "not an .attnvec file (bad magic; expected \"ATTNVEC1\")", at_byte(0));
  if (size < attnvec::header_size)
    throw_input(source, fmt::format("truncated: the header needs {} bytes, the file has {}",
                                    attnvec::header_size, size));

  const auto version = static_cast<uint32_t>(load_le(p + 8, 4));
  const auto dtype = static_cast<uint32_t>(load_le(p + 12, 4));
  const uint64_t count = load_le(p + 16, 8), dim = load_le(p + 24, 8);
  const uint64_t words_offset = load_le(p + 32, 8), words_bytes = load_le(p + 40, 8);
  const uint64_t vectors_offset = load_le(p + 48, 8), reserved = load_le(p + 56, 8);

  if (version != attnvec::version)
    throw_input(source, fmt::format("unsupported .attnvec version {} (this attn reads {})", version,
                                    attnvec::version),
                at_byte(8));
  if (dtype != attnvec::dtype_f32 && dtype != attnvec::dtype_f16)
    throw_input(source, fmt::format("unknown dtype {} (1 = float32, 2 = float16)", dtype), at_byte(12));
  if (count == 0) throw_input(source, "the file holds no words (count 0)", at_byte(16));
  if (dim == 0) throw_input(source, "dim is 0", at_byte(24));
  const uint64_t value_size = dtype == attnvec::dtype_f32 ? 4 : 2;
  uint64_t values = 0, value_bytes = 0;
  if (count > max_count || dim > max_count || !checked_mul(count, dim, values) ||
      values > max_count || !checked_mul(values, value_size, value_bytes))
    throw_input(source, fmt::format("count × dim overflows ({} × {})", count, dim), at_byte(16));
  if (reserved != 0) throw_input(source, "the reserved header field is not zero", at_byte(56));
  if (words_offset < attnvec::header_size || words_offset > size)
    throw_input(source, fmt::format("word table offset {} is out of range", words_offset),
                at_byte(32));
  if (words_bytes > size - words_offset)
    throw_input(source,
                fmt::format("word table ({} bytes at {}) runs past the end of the file ({} bytes)",
                            words_bytes, words_offset, size),
                at_byte(40));
  if (vectors_offset % attnvec::alignment != 0)
    throw_input(source, fmt::format("vectors offset {} is not a multiple of {}", vectors_offset,
                                    attnvec::alignment),
                at_byte(48));
  if (vectors_offset < words_offset + words_bytes)
    throw_input(source, fmt::format("vectors offset {} overlaps the word table", vectors_offset),
                at_byte(48));
  if (vectors_offset > size || size - vectors_offset < value_bytes)
    throw_input(source,
                fmt::format("truncated: {} × {} values need {} bytes from byte {}, the file has {}",
                            count, dim, value_bytes, vectors_offset, size),
                at_byte(48));
  if (size - vectors_offset > value_bytes)
    throw_input(source,
                fmt::format("{} bytes after the values ({} × {}); the file should end there",
                            size - vectors_offset - value_bytes, count, dim),
                at_byte(vectors_offset + value_bytes));

  attnvec_contents out;
  out.dtype = dtype;
  out.count = static_cast<int64_t>(count);
  out.dim = static_cast<int64_t>(dim);
  out.values = p + vectors_offset;
  // count ≤ words_bytes / 2 for a valid table (each word is ≥ 1 byte plus '\n'), which bounds
  // the reservation when count lies.
  out.words.reserve(static_cast<size_t>(std::min(count, words_bytes / 2)));
  const std::string_view table(reinterpret_cast<const char*>(p + words_offset), words_bytes);
  size_t pos = 0;
  for (uint64_t i = 1; i <= count; ++i) {
    const size_t end = table.find('\n', pos);
    if (end == std::string_view::npos)
      throw_input(source, fmt::format("the word table holds {} words, the header says {}", i - 1,
                                      count),
                  at_byte(words_offset + pos));
    const std::string_view word = table.substr(pos, end - pos);
    if (word.empty())
      throw_input(source, fmt::format("word {} is empty", i), at_byte(words_offset + pos));
    if (!is_valid_utf8(word))
      throw_input(source, "invalid UTF-8 in word",
                  fmt::format("word {}, byte {}", i, words_offset + pos));
    out.words.push_back(word);
    pos = end + 1;
  }
  if (pos != table.size())
    throw_input(source, fmt::format("the word table has more than the {} words the header says", count),
                at_byte(words_offset + pos));
  // NaN and infinity are refused here as the text and binary readers refuse them: one such value
  // would turn every attention score it meets into NaN. Checked on the bits (an all-ones
  // exponent), a sequential pass over the mapped values.
  const size_t item = dtype == attnvec::dtype_f32 ? 4 : 2;
  const unsigned char* v = p + vectors_offset;
  for (uint64_t i = 0; i < count * dim; ++i) {
    const unsigned char* x = v + i * item;
    const bool not_finite = item == 4 ? ((x[3] & 0x7F) == 0x7F && (x[2] & 0x80) == 0x80)
                                      : ((x[1] & 0x7C) == 0x7C);
    if (not_finite)
      throw_input(source, "a value is not a finite number (NaN or infinity)",
                  fmt::format("word {} ('{}'), value {}, byte {}", i / dim + 1,
                              out.words[static_cast<size_t>(i / dim)], i % dim + 1,
                              vectors_offset + i * item));
  }
  return out;
}

}  // namespace attn::io
