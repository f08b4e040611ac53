// An output written piece by piece (streaming) that still appears atomically: the pieces go to
// a temporary file beside the target, renamed over it by commit(); without commit (an error,
// an exception, a signal) the temporary is removed and an existing target is left as it was.
// "-" streams to standard output directly, and so does a character device or FIFO (see
// output_target.hpp); a symbolic link's target is what gets replaced.
#pragma once

#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

#include "attn/temporary_files.hpp"

namespace attn::cli {

class staged_output {
 public:
  explicit staged_output(std::string path);
  ~staged_output();
  staged_output(const staged_output&) = delete;
  staged_output& operator=(const staged_output&) = delete;

  void write(std::string_view bytes);
  // What was written so far, on its way now (a stream to a pipe shows each piece at once).
  void flush();
  void commit();

 private:
  std::string path_, target_, tmp_;  // as given; where it leads; the temporary ("" if direct)
  std::FILE* file_ = nullptr;
  std::unique_ptr<temporary_file> registered_;  // removed by a signal handler if need be
  bool committed_ = false;
};

}  // namespace attn::cli
