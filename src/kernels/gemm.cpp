// kernels::gemm: picks the instruction set's kernel and the number of threads.
// Why our own and not OpenBLAS's: Debian's threaded OpenBLAS starts its pool when the library
// loads, and the idle threads spin (sched_yield) for about 80 ms, taking a core from attn's
// threads: short `attn bench` runs came out up to 6× slow. Ours measured about 0.86× OpenBLAS's
// single-threaded speed on projection shapes (and keeps the same bits on any thread count).
#include "kernels/gemm.hpp"

#include <omp.h>

#include <algorithm>

#include "kernels/isa.hpp"

namespace attn::kernels {

void gemm(const gemm_args& g) {
  if (g.m <= 0 || g.n <= 0) return;
  if (g.k <= 0) {  // an empty sum: C = beta · C
    for (int64_t i = 0; i < g.m; ++i)
      for (int64_t j = 0; j < g.n; ++j) {
        float& c = g.c[i * g.ldc + j];
        c = g.beta == 0.0f ? 0.0f : g.beta * c;
      }
    return;
  }
  // Small products are not worth waking threads for; nor is a call from inside a parallel
  // region (its caller already splits the work).
  const int64_t work = g.m * g.n * g.k;
  const int threads = omp_in_parallel() || work < (int64_t{1} << 18) ? 1 : omp_get_max_threads();
  switch (selected_isa()) {
#if defined(__x86_64__) || defined(__i386__)
    case isa::avx512: return gemm_avx512(g, threads);
    case isa::avx2: return gemm_avx2(g, threads);
#endif
    default: return ref::gemm(g);
  }
}

void gemm_xwt(const float* x, int64_t rows, int64_t in, const float* w, int64_t out,
              const float* bias, float* y) {
  if (bias != nullptr)
    for (int64_t r = 0; r < rows; ++r) std::copy(bias, bias + out, y + r * out);
  gemm_args g;
  g.trans_b = true;
  g.m = rows, g.n = out, g.k = in;
  g.a = x, g.lda = in;
  g.b = w, g.ldb = in;
  g.beta = bias != nullptr ? 1.0f : 0.0f;
  g.c = y, g.ldc = out;
  gemm(g);
}

}  // namespace attn::kernels
