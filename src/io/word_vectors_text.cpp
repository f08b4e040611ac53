// GloVe text, word2vec / fastText text and word2vec binary files.
//
// What we accept, and why:
//  - A UTF-8 BOM and CRLF line endings (files that passed through Windows tools).
//  - Fields split on ASCII space and tab only: GloVe has tokens with U+00A0 inside.
//  - A header "count dim" only when the first line is exactly two integers (a GloVe file's first
//    line is a word and its values, so it can never be just two numbers).
//  - After a header, binary and text records are told apart by the first record: text records
//    continue after the word with nothing but number characters, binary ones with raw floats.
//  - word2vec binary records may or may not end in '\n' (GoogleNews has none).
//  - A text line whose values outnumber dim while the extra leading fields are not numbers is a
//    word with ASCII spaces (GloVe 840B has a few); every other count mismatch is a ragged row.
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "attn/error.hpp"
#include "io/vectors_readers.hpp"

namespace attn::io {

namespace {

constexpr std::string_view utf8_bom = "\xEF\xBB\xBF";
constexpr uint64_t max_count = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());

bool is_field_space(char c) { return c == ' ' || c == '\t'; }

void split_fields(std::string_view line, std::vector<std::string_view>& fields) {
  fields.clear();
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && is_field_space(line[i])) ++i;
    const size_t start = i;
    while (i < line.size() && !is_field_space(line[i])) ++i;
    if (i > start) fields.push_back(line.substr(start, i - start));
  }
}

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// A field as it appears in a message: long junk is cut so the message stays one line.
std::string shown(std::string_view field) {
  constexpr size_t limit = 40;
  return field.size() <= limit ? std::string(field) : std::string(field.substr(0, limit)) + "…";
}

std::string line_where(int64_t line) { return fmt::format("line {}", line); }
std::string record_where(int64_t record, size_t byte) {
  return fmt::format("record {}, byte {}", record, byte);
}

enum class number_status { ok, not_a_number, not_finite };

// from_chars reports both overflow and underflow as out of range; an underflow is a legitimate
// tiny value (it becomes 0 or a subnormal), an overflow is not.
number_status out_of_float_range(const char* first, const char* last, float& out) {
  double d = 0;
  auto [end, ec] = std::from_chars(first, last, d, std::chars_format::general);
  if (ec == std::errc() && end == last) {
    if (std::abs(d) >= 1.0) return number_status::not_finite;
    out = static_cast<float>(d);
    return number_status::ok;
  }
  // Beyond double as well: a negative exponent means tiny.
  const char* e = std::find_if(first, last, [](char c) { return c == 'e' || c == 'E'; });
  if (e != last && e + 1 != last && e[1] == '-') {
    out = *first == '-' ? -0.0f : 0.0f;
    return number_status::ok;
  }
  return number_status::not_finite;
}

// The whole field must be a number; from_chars ignores the locale, unlike strtof.
number_status parse_value(std::string_view s, float& out) {
  const char* first = s.data();
  const char* last = first + s.size();
  if (first != last && *first == '+') {  // from_chars takes no '+'; some writers emit one
    ++first;
    if (first != last && (*first == '-' || *first == '+')) return number_status::not_a_number;
  }
  if (first == last) return number_status::not_a_number;
  auto [end, ec] = std::from_chars(first, last, out, std::chars_format::general);
  if (ec == std::errc::invalid_argument || end != last) return number_status::not_a_number;
  if (ec == std::errc::result_out_of_range) return out_of_float_range(first, last, out);
  return std::isfinite(out) ? number_status::ok : number_status::not_finite;
}

// Lines with their 1-based numbers; the '\r' of a CRLF ending is dropped.
class line_cursor {
 public:
  explicit line_cursor(std::string_view text) : text_(text) {}

  bool next(std::string_view& line) {
    if (pos_ >= text_.size()) return false;
    size_t end = text_.find('\n', pos_);
    if (end == std::string_view::npos) end = text_.size();
    line = text_.substr(pos_, end - pos_);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    pos_ = std::min(end + 1, text_.size());
    ++number_;
    return true;
  }
  int64_t number() const { return number_; }
  size_t pos() const { return pos_; }

 private:
  std::string_view text_;
  size_t pos_ = 0;
  int64_t number_ = 0;
};

// Text records continue after the word with number characters only; binary ones with raw
// float bytes, which practically always include a byte outside that set (0 is a NUL byte).
bool looks_like_text_record(std::string_view rest) {
  const std::string_view line = rest.substr(0, rest.find('\n'));
  const size_t space = line.find_first_of(" \t");
  if (space == std::string_view::npos) return true;  // no word + space: not binary; text reports it
  const std::string_view values = line.substr(space + 1);
  bool digit = false;
  for (char c : values) {
    if (c >= '0' && c <= '9') {
      digit = true;
    } else if (!std::strchr(".+-eE \t\rnaifNAIFty", c) || c == '\0') {
      return false;
    }
  }
  return digit;
}

class reader {
 public:
  explicit reader(const std::string& source) : source_(source), duplicates_(source) {}

  // Text records until the end; dim < 0 means GloVe (the first record sets it), and
  // header_count < 0 means no header to check the number of records against.
  void text_records(line_cursor& lines, int64_t header_count, int64_t dim) {
    std::vector<std::string_view> fields;
    int64_t records = 0;
    std::string_view line;
    while (lines.next(line)) {
      split_fields(line, fields);
      if (fields.empty()) continue;  // blank lines: the final newline, mostly
      const int64_t n = lines.number();
      if (dim < 0) {
        if (fields.size() < 2) throw_input(source_, "the first line has a word but no values", line_where(n));
        dim = static_cast<int64_t>(fields.size()) - 1;
      }
      ++records;
      if (header_count >= 0 && records > header_count)
        throw_input(source_, fmt::format("more words than the header says ({})", header_count),
                    line_where(n));
      text_record(line, fields, static_cast<size_t>(dim), n);
    }
    if (header_count >= 0 && records < header_count)
      throw_input(source_, fmt::format("truncated: header says {} words, found {}", header_count,
                                       records),
                  line_where(lines.number()));
    out_.dim = dim;
  }

  void binary_records(std::string_view text, size_t pos, size_t base, int64_t count, int64_t dim) {
    const size_t record_bytes = static_cast<size_t>(dim) * 4;  // the header check bounds it
    out_.dim = dim;
    out_.values.reserve(std::min(static_cast<size_t>(count) * static_cast<size_t>(dim),
                                 (text.size() - pos) / 4));
    for (int64_t record = 1; record <= count; ++record) {
      // Most writers end a record with '\n', GoogleNews does not; word2vec's own reader skips it.
      while (pos < text.size() && (text[pos] == '\n' || text[pos] == '\r')) ++pos;
      if (pos >= text.size())
        throw_input(source_,
                    fmt::format("truncated: header says {} words, found {}", count, record - 1),
                    record_where(record, base + pos));
      const size_t end = text.find_first_of(" \n", pos);
      if (end == std::string_view::npos)
        throw_input(source_, "truncated: the file ends inside a word", record_where(record, base + pos));
      if (text[end] == '\n')
        throw_input(source_, "a word runs into a line break before its values",
                    record_where(record, base + pos));
      if (end == pos) throw_input(source_, "empty word", record_where(record, base + pos));
      const std::string_view word = text.substr(pos, end - pos);
      if (!is_valid_utf8(word))
        throw_input(source_, "invalid UTF-8 in word", record_where(record, base + pos));
      pos = end + 1;
      if (text.size() - pos < record_bytes)
        throw_input(source_,
                    fmt::format("truncated: the record needs {} bytes of values, {} are left",
                                record_bytes, text.size() - pos),
                    record_where(record, base + pos));
      const size_t before = out_.values.size();
      for (size_t j = 0; j < static_cast<size_t>(dim); ++j) {
        const auto* p = reinterpret_cast<const unsigned char*>(text.data() + pos + 4 * j);
        const uint32_t bits = static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
                              static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
        const float x = std::bit_cast<float>(bits);
        if (!std::isfinite(x))
          throw_input(source_, fmt::format("value {} is not a finite number", x),
                      record_where(record, base + pos + 4 * j));
        out_.values.push_back(x);
      }
      keep_or_drop(word, before, [&] { return record_where(record, base + end - word.size()); });
      pos += record_bytes;
    }
    while (pos < text.size() && std::strchr(" \t\r\n", text[pos]) && text[pos] != '\0') ++pos;
    if (pos < text.size())
      throw_input(source_, fmt::format("more data after the {} words the header says", count),
                  fmt::format("byte {}", base + pos));
  }

  parsed_vectors finish(vectors_format format) {
    out_.format = format;
    out_.warnings = duplicates_.finish();
    return std::move(out_);
  }

 private:
  void text_record(std::string_view line, const std::vector<std::string_view>& fields, size_t dim,
                   int64_t n) {
    const size_t k = fields.size() - 1;
    size_t word_fields = 1;
    if (k > dim) {
      word_fields = k - dim + 1;
      float ignored = 0;
      for (size_t i = 1; i < word_fields; ++i)
        if (parse_value(fields[i], ignored) != number_status::not_a_number) word_fields = 0;
    }
    if (k < dim || word_fields == 0)
      throw_input(source_, fmt::format("ragged row: expected {} values, got {}", dim, k),
                  line_where(n));
    const std::string_view last_word_field = fields[word_fields - 1];
    const std::string_view word = line.substr(
        static_cast<size_t>(fields[0].data() - line.data()),
        static_cast<size_t>(last_word_field.data() + last_word_field.size() - fields[0].data()));
    if (!is_valid_utf8(word)) throw_input(source_, "invalid UTF-8 in word", line_where(n));
    const size_t before = out_.values.size();
    for (size_t i = word_fields; i < fields.size(); ++i) {
      float x = 0;
      switch (parse_value(fields[i], x)) {
        case number_status::ok: break;
        case number_status::not_a_number:
          throw_input(source_, fmt::format("value '{}' is not a number", shown(fields[i])),
                      line_where(n));
        case number_status::not_finite:
          throw_input(source_, fmt::format("value '{}' is not a finite number", shown(fields[i])),
                      line_where(n));
      }
      out_.values.push_back(x);
    }
    keep_or_drop(word, before, [&] { return line_where(n); });
  }

  // A repeated word keeps the first vector (as gensim does): the new values are taken back.
  template <class where_fn>
  void keep_or_drop(std::string_view word, size_t values_before, where_fn where) {
    if (seen_.insert(word).second) {
      out_.words.push_back(word);
    } else {
      duplicates_.add(word, where());
      out_.values.resize(values_before);
    }
  }

  const std::string& source_;
  parsed_vectors out_;
  std::unordered_set<std::string_view> seen_;
  duplicate_log duplicates_;
};

}  // namespace

parsed_vectors parse_word_vectors(std::string_view bytes, const std::string& source) {
  const size_t base = bytes.starts_with(utf8_bom) ? utf8_bom.size() : 0;
  const std::string_view text = bytes.substr(base);
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) throw_input(source, "empty file");

  reader r(source);
  line_cursor lines(text);
  std::string_view first;
  lines.next(first);
  std::vector<std::string_view> fields;
  split_fields(first, fields);
  if (fields.size() != 2 || !all_digits(fields[0]) || !all_digits(fields[1])) {
    line_cursor from_start(text);
    r.text_records(from_start, -1, -1);
    return r.finish(vectors_format::glove_text);
  }

  uint64_t count = 0, dim = 0;
  auto header_number = [&](std::string_view field, uint64_t& value, const char* what) {
    auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), value);
    if (ec != std::errc() || value > max_count)
      throw_input(source, fmt::format("header {} '{}' is too large", what, shown(field)),
                  line_where(1));
  };
  header_number(fields[0], count, "word count");
  header_number(fields[1], dim, "dimension");
  if (count == 0) throw_input(source, "header says 0 words", line_where(1));
  if (dim == 0) throw_input(source, "header says 0 dimensions", line_where(1));
  uint64_t values = 0, value_bytes = 0;
  if (!checked_mul(count, dim, values) || !checked_mul(values, 4, value_bytes) ||
      value_bytes > max_count)
    throw_input(source, fmt::format("header says {} words × {} dimensions: too many values", count, dim),
                line_where(1));

  const auto n = static_cast<int64_t>(count), d = static_cast<int64_t>(dim);
  if (looks_like_text_record(text.substr(lines.pos()))) {
    r.text_records(lines, n, d);
    return r.finish(vectors_format::word2vec_text);
  }
  r.binary_records(text, lines.pos(), base, n, d);
  return r.finish(vectors_format::word2vec_binary);
}

}  // namespace attn::io
