// y = W·x + b for one row (linear_layer.hpp).
#include <omp.h>

#include <algorithm>

#include "kernels/isa_clones.hpp"
#include "nn/linear_layer.hpp"

namespace attn::nn {

namespace {

// Outputs first … last − 1. Each output's sum runs in vector lanes, so its bits depend on the
// lanes' width: kernels/isa_clones.hpp picks the width with the selected instruction set.
ATTN_ISA_CLONES(void, linear_rows,
                (const float* x, const float* w, const float* b, float* y, int64_t in, int64_t first, int64_t last),
                (x, w, b, y, in, first, last)) {
  for (int64_t o = first; o < last; ++o) {
    const float* row = w + o * in;
    float sum = 0;
#pragma omp simd reduction(+ : sum)
    for (int64_t i = 0; i < in; ++i) sum += row[i] * x[i];
    y[o] = sum + (b != nullptr ? b[o] : 0.0f);
  }
}

}  // namespace

void linear_row_forward(const float* x, const float* w, const float* b, float* y, int64_t in,
                        int64_t out) {
  if (out * in < (int64_t{1} << 18)) return linear_rows(x, w, b, y, in, 0, out);
  // Each thread one stretch of outputs (an output's sum is the same whichever thread adds it).
#pragma omp parallel
  {
    const int64_t threads = omp_get_num_threads(), t = omp_get_thread_num();
    const int64_t share = (out + threads - 1) / threads, first = std::min(out, t * share);
    linear_rows(x, w, b, y, in, first, std::min(out, first + share));
  }
}

}  // namespace attn::nn
