// A training run holds its checkpoint: an exclusive lock (flock) on CHECKPOINT.lock, taken
// before any work and kept until the process ends, so a second run with the same -o (or
// --checkpoint) is refused at its start instead of saving over, resuming from or removing the
// first one's checkpoint. The holder removes the lock file while it still holds the lock (and
// on a signal, as a temporary), and a run that takes the lock checks that the file it locked is
// still the one at that path, so a run never holds a lock file another has removed. A lock file
// left by a killed run holds no lock: the next run takes it.
#pragma once

#include <memory>
#include <string>

#include "attn/temporary_files.hpp"

namespace attn::cli {

class run_lock {
 public:
  run_lock() = default;
  ~run_lock() { release(); }
  run_lock(const run_lock&) = delete;
  run_lock& operator=(const run_lock&) = delete;

  // A usage error naming the checkpoint when another process holds it.
  void acquire(const std::string& checkpoint);
  void release();

  static std::string path_for(const std::string& checkpoint) { return checkpoint + ".lock"; }

 private:
  int fd_ = -1;
  std::string path_;
  std::unique_ptr<temporary_file> on_signal_;  // removed by the signal handlers too
};

}  // namespace attn::cli
