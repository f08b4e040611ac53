// Files being written under a temporary name (an output staged beside its target, a checkpoint
// being saved). Each is registered while it exists, so that a program interrupted by a signal
// can remove them all from its handler: remove_temporary_files() is async-signal-safe.
#pragma once

#include <string>

namespace attn {

// Registers `path` for as long as the object lives. Registration never fails: past the
// registry's capacity (64 files at once) a file is simply not removed on a signal.
class temporary_file {
 public:
  explicit temporary_file(const std::string& path);
  ~temporary_file();
  temporary_file(const temporary_file&) = delete;
  temporary_file& operator=(const temporary_file&) = delete;

 private:
  int slot_ = -1;
};

// Unlinks every registered file; only unlink(2) and atomics, so a signal handler may call it.
void remove_temporary_files() noexcept;

}  // namespace attn
