// Matrix products for the layers (projections, and their gradients): our own register-blocked
// sgemm, one translation unit per instruction set, with a float64 reference twin.
#pragma once

#include <cstdint>

namespace attn::kernels {

// C[m, n] = alpha · op(A) · op(B) + beta · C, every matrix row-major with its leading dimension
// (the distance between rows), the convention of cblas_sgemm(CblasRowMajor, ...):
//   op(A) is A [m, k], or Aᵀ when trans_a (A stored [k, m]);
//   op(B) is B [k, n], or Bᵀ when trans_b (B stored [n, k]).
// beta == 0 never reads C (it may hold garbage, NaN included). bias, when given, adds bias[j]
// to every row last: C = (alpha · op(A)·op(B) + beta · C) + bias, a linear layer's epilogue.
struct gemm_args {
  bool trans_a = false, trans_b = false;
  int64_t m = 0, n = 0, k = 0;
  float alpha = 1.0f;
  const float* a = nullptr;
  int64_t lda = 0;
  const float* b = nullptr;
  int64_t ldb = 0;
  float beta = 0.0f;
  float* c = nullptr;
  int64_t ldc = 0;
  const float* bias = nullptr;  // [n]
  // C in groups, when c_rows > 0: rows in groups of c_rows, columns in groups of c_cols (a
  // multiple of 32, so that no micro-kernel tile straddles two), element (i, j) at c_at(i, j).
  // A projection's [B·L, G·hd] result goes straight to heads [B, G, L, hd] this way.
  int64_t c_rows = 0, c_row_group_stride = 0, c_cols = 0, c_col_group_stride = 0;

  float* c_at(int64_t i, int64_t j) const {
    if (c_rows == 0) return c + i * ldc + j;
    return c + (i / c_rows) * c_row_group_stride + (i % c_rows) * ldc +
           (j / c_cols) * c_col_group_stride + j % c_cols;
  }
};

// On the OpenMP threads (one, when called inside a parallel region or for a small product).
void gemm(const gemm_args& g);

// The same product with its operands in bf16, as PyTorch's autocast runs a matmul: each element
// of op(A) and op(B) rounded to bf16 (to nearest, ties to even; attn::float_to_bf16), the
// products summed in float32 (vdpbf16ps pairs, or their float32 emulation where the CPU lacks
// the instruction), C kept in float32. Twice the float32 kernel's multiply-adds per instruction
// on a CPU with AVX-512 BF16; the bits depend on the instruction set, never on the threads.
void gemm_bf16(const gemm_args& g);

// A wider matrix packed whole by a kernel's pack_b_* (see gemm_packed_b.hpp), of which a product
// uses the n columns from first_column on (a multiple of the kernel's panel width).
struct b_panels {
  const float* data = nullptr;  // nullptr: none, the kernel packs g.b itself
  int64_t width = 0;            // the packed matrix's columns, padded to whole panels
  int64_t first_column = 0;
};

// The instruction set's kernel on `threads` OpenMP threads (gemm picks the set and the count).
// With packed panels, g's b, ldb and trans_b are not read.
void gemm_avx512(const gemm_args& g, int threads, const b_panels& packed = {});
void gemm_avx2(const gemm_args& g, int threads, const b_panels& packed = {});

// op(B) of g (b, ldb, trans_b, k, n) packed whole for that kernel, into k · *_panel_width(n)
// floats.
void pack_b_avx512(const gemm_args& g, float* panels);
void pack_b_avx2(const gemm_args& g, float* panels);
int64_t avx512_panel_width(int64_t n);
int64_t avx2_panel_width(int64_t n);
// The columns of a whole panel (NR): a product may start at a multiple of it in packed panels.
int64_t avx512_panel_columns();
int64_t avx2_panel_columns();

// gemm_bf16's kernels (gemm_bf16 picks by kernels::selected_bf16_path()).
void gemm_bf16_avx512(const gemm_args& g, int threads);
void gemm_bf16_avx512_emulated(const gemm_args& g, int threads);
void gemm_bf16_avx2(const gemm_args& g, int threads);
// On AMX's tiles (only where kernels::amx_bf16_usable(): the tile instructions fault elsewhere).
void gemm_bf16_amx(const gemm_args& g, int threads);

// y[rows, out] = x[rows, in] · w[out, in]ᵀ (+ bias[out] when given); all dense: a linear layer.
void gemm_xwt(const float* x, int64_t rows, int64_t in, const float* w, int64_t out,
              const float* bias, float* y);

namespace ref {
// The specification: three loops, float64 accumulation.
void gemm(const gemm_args& g);
// gemm_bf16's: the same loops over the operands rounded to bf16 (float64 sums of exact products).
void gemm_bf16(const gemm_args& g);
}  // namespace ref

}  // namespace attn::kernels
