// Reading a text file line by line the way attn's trainers do: plain text, or .xz / .gz
// compressed (decompressed as it is read, so a file larger than memory streams).
#pragma once

#include <functional>
#include <string>

namespace attn {

// Calls on_line with each line (without its '\n'; a final line without one counts). An input
// error names the file when it cannot be read or its compressed data is damaged.
void for_each_line(const std::string& path, const std::function<void(const std::string&)>& on_line);

}  // namespace attn
