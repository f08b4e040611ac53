// Reading a text file line by line the way attn's trainers do: plain text, or .xz / .gz
// compressed (decompressed as it is read, so a file larger than memory streams).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace attn {

// Text that is not well-formed UTF-8 is refused the one way every reader of text refuses it
// (the trainers, eval, tokenize): an input error naming the source and `line` (from 1), or, when
// line is 0, the bad byte's offset (`offset`: where text starts in the source).
void check_utf8(std::string_view text, const std::string& source, int64_t line, int64_t offset = 0);

// Calls on_line with each line (without its '\n'; a final line without one counts). An input
// error names the file when it cannot be read, its compressed data is damaged, or a line is
// not UTF-8 (check_utf8).
void for_each_line(const std::string& path, const std::function<void(const std::string&)>& on_line);

}  // namespace attn
