#include "io/replace_file.hpp"

#include <cstdio>
#include <fstream>

#include "attn/error.hpp"
#include "attn/temporary_files.hpp"

namespace attn::io {

void replace_file(const std::string& path, const std::string& what, const std::function<void(std::ostream&)>& write) {
  const std::string tmp = path + ".tmp";
  const temporary_file registered(tmp);  // removed if a signal ends the program mid-write
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw_input(tmp, "cannot write the " + what);
    write(out);
    out.close();
    if (!out) {
      std::remove(tmp.c_str());
      throw_input(tmp, "cannot write the " + what + " (disk full?)");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw_input(path, "cannot move the " + what + " into place");
  }
}

}  // namespace attn::io
