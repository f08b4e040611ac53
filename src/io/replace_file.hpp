// Writing a file so that it is replaced whole or not at all: the bytes go to PATH.tmp (removed if
// a signal ends the program meanwhile), then a rename puts them in place. The library's own
// outputs (checkpoints, TextModel.save) use it; the CLI stages its outputs the same way
// (cli/staged_output.hpp), several at once.
#pragma once

#include <functional>
#include <ostream>
#include <string>

namespace attn::io {

// `what` names the file in errors ("checkpoint", "model file"): "cannot write the checkpoint",
// "… (disk full?)", "cannot move the checkpoint into place", each an input error naming the path.
void replace_file(const std::string& path, const std::string& what, const std::function<void(std::ostream&)>& write);

}  // namespace attn::io
