// kernels::gemm: picks the instruction set's kernel and the number of threads.
// Why our own and not OpenBLAS's: Debian's threaded OpenBLAS starts its pool when the library
// loads, and the idle threads spin (sched_yield) for about 80 ms, taking a core from attn's
// threads: short `attn bench` runs came out up to 6× slow. Ours measured about 0.86× OpenBLAS's
// single-threaded speed on projection shapes (and keeps the same bits on any thread count).
#include "kernels/gemm.hpp"
#include "kernels/gemm_packed_b.hpp"

#include <omp.h>

#include "kernels/isa.hpp"

namespace attn::kernels {

namespace {

// Small products are not worth waking threads for; nor is a call from inside a parallel region
// (its caller already splits the work).
int threads_for(const gemm_args& g) {
  const int64_t work = g.m * g.n * g.k;
  return omp_in_parallel() || work < (int64_t{1} << 18) ? 1 : omp_get_max_threads();
}

// gemm with op(B) read from columns first_column.. of `packed` when they fit this kernel and shape.
void run_gemm(const gemm_args& g, const packed_b* packed, int64_t first_column) {
  if (g.m <= 0 || g.n <= 0) return;
  if (g.k <= 0) {  // an empty sum: C = beta · C (+ bias)
    for (int64_t i = 0; i < g.m; ++i)
      for (int64_t j = 0; j < g.n; ++j) {
        float& c = *g.c_at(i, j);
        c = g.beta == 0.0f ? 0.0f : g.beta * c;
        if (g.bias != nullptr) c += g.bias[j];
      }
    return;
  }
  const int threads = threads_for(g);
  const isa kernel = selected_isa();
  const b_panels panels = packed != nullptr ? packed->columns(kernel, g.k, first_column, g.n) : b_panels{};
  switch (kernel) {
#if defined(__x86_64__) || defined(__i386__)
    case isa::avx512: return gemm_avx512(g, threads, panels);
    case isa::avx2: return gemm_avx2(g, threads, panels);
#endif
    default: return ref::gemm(g);
  }
}

}  // namespace

void gemm(const gemm_args& g) { run_gemm(g, nullptr, 0); }

void gemm_bf16(const gemm_args& g) {
  if (g.m <= 0 || g.n <= 0) return;
  if (g.k <= 0) return run_gemm(g, nullptr, 0);  // no operand to round: C = beta · C (+ bias)
  const int threads = threads_for(g);
  switch (selected_bf16_path()) {
#if defined(__x86_64__) || defined(__i386__)
    case bf16_path::avx512_bf16:
      // The tiles are 16 rows and 32 of the inner dimension deep: a smaller product is mostly
      // padding, and vdpbf16ps does it with less packing.
      if (g.m >= 16 && g.n >= 16 && g.k >= 32 && amx_bf16_usable()) return gemm_bf16_amx(g, threads);
      return gemm_bf16_avx512(g, threads);
    case bf16_path::emulated_avx512: return gemm_bf16_avx512_emulated(g, threads);
    case bf16_path::emulated_avx2: return gemm_bf16_avx2(g, threads);
#endif
    default: return ref::gemm_bf16(g);
  }
}

void gemm(const gemm_args& g, const packed_b& b, int64_t first_column) { run_gemm(g, &b, first_column); }

void gemm_xwt(const float* x, int64_t rows, int64_t in, const float* w, int64_t out,
              const float* bias, float* y) {
  gemm_args g;
  g.trans_b = true;
  g.m = rows, g.n = out, g.k = in;
  g.a = x, g.lda = in;
  g.b = w, g.ldb = in;
  g.c = y, g.ldc = out;
  g.bias = bias;
  gemm(g);
}

}  // namespace attn::kernels
