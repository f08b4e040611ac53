// The projections' matrix product on OpenBLAS (float32 accumulation; attn::ref::linear is the
// float64 specification it is tested against).
#include "kernels/gemm.hpp"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <mutex>

namespace attn::kernels {

namespace {

// OpenBLAS would otherwise start one thread per core inside every call, on top of attn's
// OpenMP threads (each of which calls it). Set once, before the first call.
void single_threaded_blas() {
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
}

}  // namespace

void gemm_xwt(const float* x, int64_t rows, int64_t in, const float* w, int64_t out,
              const float* bias, float* y) {
  if (rows == 0 || out == 0) return;
  single_threaded_blas();
  // Small products are not worth waking threads for; large ones get a block of rows each.
  const int64_t work = rows * in * out;
  const int threads = work < (int64_t{1} << 18) ? 1 : std::max(1, omp_get_max_threads());
  const int64_t chunk = (rows + threads - 1) / threads;
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int t = 0; t < threads; ++t) {
    const int64_t r0 = t * chunk, n = std::min(rows, r0 + chunk) - r0;
    if (n <= 0) continue;
    float* yt = y + r0 * out;
    float beta = 0.0f;
    if (bias != nullptr) {
      for (int64_t r = 0; r < n; ++r) std::copy(bias, bias + out, yt + r * out);
      beta = 1.0f;
    }
    if (in == 0) {
      if (bias == nullptr) std::fill(yt, yt + n * out, 0.0f);
      continue;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(n), static_cast<int>(out),
                static_cast<int>(in), 1.0f, x + r0 * in, static_cast<int>(in), w,
                static_cast<int>(in), beta, yt, static_cast<int>(out));
  }
}

}  // namespace attn::kernels
