// A scope in which OpenMP runs one thread when the work is small. The training layers make many
// small calls (a batch of short sentences); waking a second thread for each costs more than the
// call, and on a busy machine far more (seed 003's toy trained 15× slower with two threads than
// with one on the shared 2-core development machine). The kernels give the same bits with any
// thread count, so this changes the time, never the result.
#pragma once

#include <omp.h>

#include <cstdint>

namespace attn::nn {

class serial_when_small {
 public:
  // work: multiply-adds. About 4 million take a millisecond on one core, long enough to be
  // worth a second thread.
  explicit serial_when_small(int64_t work)
      : active_(work < (int64_t{1} << 22)), threads_(omp_get_max_threads()) {
    if (active_) omp_set_num_threads(1);
  }
  ~serial_when_small() {
    if (active_) omp_set_num_threads(threads_);
  }
  serial_when_small(const serial_when_small&) = delete;
  serial_when_small& operator=(const serial_when_small&) = delete;

 private:
  bool active_;
  int threads_;
};

}  // namespace attn::nn
