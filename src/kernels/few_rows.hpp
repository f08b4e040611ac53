// y = x·Wᵀ + b for a few rows at a time against a weight matrix that stays fixed: the product
// beam search makes at every step (one row per hypothesis, 1 to 12 of them), too short for the
// blocked gemm, whose micro-kernel always computes 8 rows. W is packed once into panels of 32
// outputs, each [in][32], so a step reads every weight once, in order, and each output's sum
// runs over `in` in order in one register whatever the number of rows: a row's bits are the
// same alone as among others (step() and step_together() agree exactly).
#pragma once

#include <cstdint>

namespace attn::kernels {

inline constexpr int64_t few_rows_panel = 32;

// Floats of the packed form of W [out, in]: whole panels of 32 outputs.
int64_t few_rows_packed_size(int64_t out, int64_t in);
// W [out, in] → panels[p][k][c] = W[32p + c][k], zeros past `out`.
void pack_few_rows(const float* w, int64_t out, int64_t in, float* panels);
// x [rows, in] → y [rows, out] (ldy apart) = x·Wᵀ + bias (bias [out] or null), W as packed.
void few_rows_product(const float* panels, const float* bias, const float* x, int64_t rows, int64_t in,
                      int64_t out, float* y, int64_t ldy);

// The instruction sets' kernels (few_rows_avx512.cpp, few_rows_avx2.cpp), called only where
// the CPU has them.
void few_rows_product_avx512(const float* panels, const float* bias, const float* x, int64_t rows, int64_t in,
                             int64_t out, float* y, int64_t ldy);
void few_rows_product_avx2(const float* panels, const float* bias, const float* x, int64_t rows, int64_t in,
                           int64_t out, float* y, int64_t ldy);

namespace ref {
// The same product from the unpacked W, every sum in double: what tests hold the kernels to.
void few_rows_product(const float* w, const float* bias, const float* x, int64_t rows, int64_t in, int64_t out,
                      float* y, int64_t ldy);
}  // namespace ref

}  // namespace attn::kernels
