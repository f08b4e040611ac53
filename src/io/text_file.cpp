#include "attn/text_file.hpp"

#include "io/text_lines.hpp"

namespace attn {

void for_each_line(const std::string& path, const std::function<void(const std::string&)>& on_line) {
  io::text_lines lines(path);
  std::string line;
  while (lines.next(line)) on_line(line);
}

}  // namespace attn
