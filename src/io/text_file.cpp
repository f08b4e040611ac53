#include "attn/text_file.hpp"

#include <fmt/format.h>

#include "attn/error.hpp"
#include "core/utf8.hpp"
#include "io/text_lines.hpp"

namespace attn {

void check_utf8(std::string_view text, const std::string& source, int64_t line, int64_t offset) {
  const size_t bad = first_invalid_utf8(text);
  if (bad == std::string_view::npos) return;
  // Refused, not passed on: words that are not UTF-8 could not be saved in a model or shown.
  throw_input(source,
              fmt::format("not UTF-8 text (byte 0x{:02X}); convert it first, e.g. iconv -f latin1 -t utf-8",
                          static_cast<unsigned char>(text[bad])),
              line > 0 ? fmt::format("line {}", line) : fmt::format("byte {}", offset + static_cast<int64_t>(bad)));
}

void for_each_line(const std::string& path, const std::function<void(const std::string&)>& on_line) {
  io::text_lines lines(path);
  std::string line;
  for (int64_t number = 1; lines.next(line); ++number) {
    check_utf8(line, path, number);
    on_line(line);
  }
}

}  // namespace attn
