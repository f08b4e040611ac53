// Reading input files whole, as untrusted input: a missing file, a directory or a device is an
// input error naming it, never an endless read.
#pragma once

#include <cstddef>
#include <string>

namespace attn {

// What a pipe or FIFO may hold: a regular file's size is known, a stream's is not, and a stream
// that never ends (/dev/zero through a pipe, `yes`) must still end in an error.
constexpr size_t max_stream_bytes = size_t{1} << 30;

// An input opened read-only, closed with the object: an input error unless it is a regular
// file, a pipe or a FIFO (a directory, a device such as /dev/zero or a terminal, or a socket
// is refused).
class input_file {
 public:
  explicit input_file(const std::string& path);
  ~input_file();
  input_file(const input_file&) = delete;
  input_file& operator=(const input_file&) = delete;
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
};

// A whole file's bytes ("cannot open: …", and the checks above).
std::string read_file(const std::string& path);

}  // namespace attn
