#include "run_lock.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "attn/error.hpp"

namespace attn::cli {

void run_lock::acquire(const std::string& checkpoint) {
  const std::string path = path_for(checkpoint);
  // A few tries: the file locked may be removed by its holder between the open and the lock.
  for (int attempt = 0; attempt < 100; ++attempt) {
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) throw_input(path, fmt::format("cannot create the run's lock file: {}", std::strerror(errno)));
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int e = errno;
      ::close(fd);
      if (e == EWOULDBLOCK)
        throw error(error_kind::usage, checkpoint,
                    fmt::format("another attn train is running with this checkpoint (it holds {}); "
                                "wait for it to end, or give this run another -o or --checkpoint",
                                path));
      throw_input(path, fmt::format("cannot lock: {}", std::strerror(e)));
    }
    struct stat held {}, now {};
    if (::fstat(fd, &held) == 0 && held.st_size > 0) {
      // attn's lock files stay empty: this is somebody's file, which release() would remove.
      ::close(fd);
      throw error(error_kind::usage, checkpoint,
                  fmt::format("{} exists and is not a lock file attn made (it is not empty); move it, "
                              "or give this run another -o or --checkpoint",
                              path));
    }
    if (::stat(path.c_str(), &now) == 0 && held.st_dev == now.st_dev && held.st_ino == now.st_ino) {
      fd_ = fd;
      path_ = path;
      on_signal_ = std::make_unique<temporary_file>(path);
      return;
    }
    ::close(fd);  // its holder removed it meanwhile: lock the file now at that path
  }
  throw_input(path, "cannot lock: the file keeps being replaced");
}

void run_lock::release() {
  if (fd_ < 0) return;
  on_signal_.reset();
  ::unlink(path_.c_str());  // while still held: see the header
  ::close(fd_);
  fd_ = -1;
}

}  // namespace attn::cli
