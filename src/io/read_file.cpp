#include "io/read_file.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "attn/error.hpp"

namespace attn {

namespace {

void check_mode(mode_t mode, const std::string& path) {
  if (S_ISREG(mode) || S_ISFIFO(mode)) return;
  if (S_ISDIR(mode)) throw_input(path, "is a directory, not a file");
  if (S_ISCHR(mode) || S_ISBLK(mode))
    throw_input(path, "is a device, not a file (attn reads regular files, pipes and FIFOs)");
  throw_input(path, "is not a regular file, a pipe or a FIFO");
}

void check_input_kind(int fd, const std::string& path) {
  struct stat info {};
  if (::fstat(fd, &info) != 0) throw_input(path, fmt::format("cannot stat: {}", std::strerror(errno)));
  check_mode(info.st_mode, path);
}

}  // namespace

input_file::input_file(const std::string& path) : fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {
  if (fd_ < 0) throw_input(path, fmt::format("cannot open: {}", std::strerror(errno)));
  try {
    check_input_kind(fd_, path);
  } catch (...) {
    ::close(fd_);
    throw;
  }
}

input_file::~input_file() { ::close(fd_); }

std::string read_file(const std::string& path) {
  const input_file file(path);
  const int fd = file.fd();
  std::string bytes;
  char buffer[1 << 16];
  for (;;) {
    const ssize_t got = ::read(fd, buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw_input(path, fmt::format("cannot read: {}", std::strerror(errno)));
    if (got == 0) break;
    bytes.append(buffer, static_cast<size_t>(got));
    if (bytes.size() > max_stream_bytes)
      throw_input(path, fmt::format("more than {} bytes: too large to read whole", max_stream_bytes));
  }
  return bytes;
}

}  // namespace attn
