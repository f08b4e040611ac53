// few_rows_product: the packing, the choice of kernel and the double reference (few_rows.hpp).
#include "kernels/few_rows.hpp"

#include <algorithm>

#include "kernels/isa.hpp"

namespace attn::kernels {

int64_t few_rows_packed_size(int64_t out, int64_t in) {
  return (out + few_rows_panel - 1) / few_rows_panel * few_rows_panel * in;
}

void pack_few_rows(const float* w, int64_t out, int64_t in, float* panels) {
  for (int64_t o0 = 0; o0 < out; o0 += few_rows_panel) {
    float* panel = panels + o0 * in;
    for (int64_t k = 0; k < in; ++k)
      for (int64_t c = 0; c < few_rows_panel; ++c)
        panel[k * few_rows_panel + c] = o0 + c < out ? w[(o0 + c) * in + k] : 0.0f;
  }
}

namespace {

// No vector kernel: the same sums in the same order, one output at a time.
void few_rows_product_scalar(const float* panels, const float* bias, const float* x, int64_t rows, int64_t in,
                             int64_t out, float* y, int64_t ldy) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < out; ++o) {
      const float* column = panels + o / few_rows_panel * few_rows_panel * in + o % few_rows_panel;
      float sum = 0;
      for (int64_t k = 0; k < in; ++k) sum += x[r * in + k] * column[k * few_rows_panel];
      y[r * ldy + o] = sum + (bias != nullptr ? bias[o] : 0.0f);
    }
}

}  // namespace

void few_rows_product(const float* panels, const float* bias, const float* x, int64_t rows, int64_t in,
                      int64_t out, float* y, int64_t ldy) {
  if (rows <= 0 || out <= 0) return;
  switch (selected_isa()) {
#if defined(__x86_64__) || defined(__i386__)
    case isa::avx512: return few_rows_product_avx512(panels, bias, x, rows, in, out, y, ldy);
    case isa::avx2: return few_rows_product_avx2(panels, bias, x, rows, in, out, y, ldy);
#endif
    default: return few_rows_product_scalar(panels, bias, x, rows, in, out, y, ldy);
  }
}

namespace ref {

void few_rows_product(const float* w, const float* bias, const float* x, int64_t rows, int64_t in, int64_t out,
                      float* y, int64_t ldy) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < out; ++o) {
      double sum = bias != nullptr ? bias[o] : 0.0;
      for (int64_t k = 0; k < in; ++k) sum += static_cast<double>(x[r * in + k]) * w[o * in + k];
      y[r * ldy + o] = static_cast<float>(sum);
    }
}

}  // namespace ref

}  // namespace attn::kernels
