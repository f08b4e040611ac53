// Threads for one run: options.threads (> 0) while the object lives, the caller's own count back
// after it, as it was (the trainers' threads option).
#pragma once

#include <omp.h>

#include <cstdint>

namespace attn::train {

class run_threads {
 public:
  explicit run_threads(int64_t n) {
    if (n > 0) omp_set_num_threads(static_cast<int>(n));
  }
  ~run_threads() { omp_set_num_threads(before_); }
  run_threads(const run_threads&) = delete;
  run_threads& operator=(const run_threads&) = delete;

 private:
  int before_ = omp_get_max_threads();
};

}  // namespace attn::train
