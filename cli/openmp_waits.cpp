// How long OpenMP's idle workers spin before they sleep. libgomp's default, with neither
// OMP_WAIT_POLICY nor GOMP_SPINCOUNT set, spins 300,000 times (milliseconds) at every barrier
// and between parallel regions. On a quiet machine that is harmless; beside other busy processes
// a spinning worker takes the core its own master needs, and `--threads 2` (the default on two
// cores) ran 2.5-3.8x slower than `--threads 1` (issue #52). A short spin keeps the hand-over
// between back-to-back regions quick and sleeps soon after (bench/threads_under_load).
//
// libgomp reads its variables once, when it is loaded, before main; and glibc resets the
// environment from the process's own after any pre-init code could set it. So the only way to
// choose for the user is to set the variable and run this same program again in place (the same
// process id, arguments and descriptors); where that fails, attn runs on with libgomp's default.
#include "openmp_waits.hpp"

#include <sys/auxv.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace attn::cli {

namespace {
// About a microsecond or two of spinning: back-to-back regions still hand over without a sleep.
constexpr const char* short_spin = "1000";
}

void use_short_openmp_spins(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr || std::getenv("GOMP_SPINCOUNT") != nullptr) return;
  // Started as `ld.so ./attn …`, the program image is the loader's (no interpreter of its own):
  // running "itself" again would run the loader without the program.
  if (getauxval(AT_BASE) == 0) return;
  // The real path, not /proc/self/exe: the process keeps its name (ps, pgrep, top show "attn").
  std::string self(4096, '\0');
  const ssize_t n = readlink("/proc/self/exe", self.data(), self.size() - 1);
  if (n <= 0 || static_cast<size_t>(n) >= self.size() - 1) return;
  self.resize(static_cast<size_t>(n));
  if (setenv("GOMP_SPINCOUNT", short_spin, 1) != 0) return;
  execv(self.c_str(), argv);
  unsetenv("GOMP_SPINCOUNT");  // exec failed: libgomp's default, as before
}

}  // namespace attn::cli
