// An output written piece by piece (streaming) that still appears atomically: the pieces go to
// a temporary file beside the target, renamed over it by commit(); without commit (an error,
// an exception) the temporary is removed and an existing target is left as it was.
// "-" streams to standard output directly.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

namespace attn::cli {

class staged_output {
 public:
  explicit staged_output(std::string path);
  ~staged_output();
  staged_output(const staged_output&) = delete;
  staged_output& operator=(const staged_output&) = delete;

  void write(std::string_view bytes);
  void commit();

 private:
  std::string path_, tmp_;
  std::FILE* file_ = nullptr;
  bool committed_ = false;
};

}  // namespace attn::cli
