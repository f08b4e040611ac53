#include "io/read_file.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "attn/error.hpp"

namespace attn {

std::string read_file(const std::string& path) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) throw_input(path, std::string("cannot open: ") + std::strerror(errno));
  std::string bytes;
  char buffer[1 << 16];
  for (;;) {
    const size_t n = std::fread(buffer, 1, sizeof buffer, f.get());
    bytes.append(buffer, n);
    if (n < sizeof buffer) break;
  }
  if (std::ferror(f.get())) throw_input(path, std::string("cannot read: ") + std::strerror(errno));
  return bytes;
}

}  // namespace attn
