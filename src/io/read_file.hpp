// Reads a whole file into memory, or throws an input error naming it ("cannot open: …").
#pragma once

#include <string>

namespace attn {

std::string read_file(const std::string& path);

}  // namespace attn
