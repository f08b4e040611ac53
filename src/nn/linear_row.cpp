// y = W·x + b for one row (linear_layer.hpp).
#include "nn/linear_layer.hpp"

namespace attn::nn {

__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
void linear_row_forward(const float* x, const float* w, const float* b, float* y, int64_t in,
                        int64_t out) {
#pragma omp parallel for schedule(static) if (out * in >= (int64_t{1} << 18))
  for (int64_t o = 0; o < out; ++o) {
    const float* row = w + o * in;
    float sum = 0;
#pragma omp simd reduction(+ : sum)
    for (int64_t i = 0; i < in; ++i) sum += row[i] * x[i];
    y[o] = sum + (b != nullptr ? b[o] : 0.0f);
  }
}

}  // namespace attn::nn
