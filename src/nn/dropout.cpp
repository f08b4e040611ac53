// Dropout masks from a counter-based hash (see dropout.hpp).
#include "nn/dropout.hpp"

#include <algorithm>

#include "kernels/isa_clones.hpp"
#include "nn/parallel_elements.hpp"

namespace attn::nn {

namespace {

// splitmix64's finaliser: a bijection of 64 bits whose outputs pass as independent uniforms for
// consecutive inputs.
[[gnu::always_inline]] inline uint64_t mix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// mask[first .. last) of the hash's uniforms. The float masks (training's) are compiled for
// AVX-512 too, where the hash's 64-bit products are vector instructions (the baseline has none:
// every element was scalar); integer arithmetic and an exact conversion, so the same bits.
template <class T>
[[gnu::always_inline]] inline void mask_range(uint64_t base, double p, T keep, T* mask, int64_t first, int64_t last) {
  for (int64_t i = first; i < last; ++i) {
    const double u = static_cast<double>(mix(base ^ static_cast<uint64_t>(i)) >> 11) * 0x1.0p-53;
    mask[i] = u < p ? T(0) : keep;
  }
}

ATTN_ISA_CLONES(void, mask_range_of, (uint64_t base, double p, float keep, float* mask, int64_t first, int64_t last),
                (base, p, keep, mask, first, last)) {
  mask_range(base, p, keep, mask, first, last);
}

void mask_range_of(uint64_t base, double p, double keep, double* mask, int64_t first, int64_t last) {
  mask_range(base, p, keep, mask, first, last);
}

}  // namespace

uint64_t seed_for(uint64_t seed, uint64_t k) {
  return seed == 0 ? 0 : mix(seed + k * 0x9e3779b97f4a7c15ULL) | 1;
}

template <class T>
void dropout_mask(uint64_t seed, double p, T* mask, int64_t n) {
  const T keep = static_cast<T>(1.0 / (1.0 - p));
  const uint64_t base = mix(seed);
  constexpr int64_t run = 4096;  // elements per call of the clone
  const int64_t runs = (n + run - 1) / run;
#pragma omp parallel for schedule(static) if (worth_threads_elementwise(n))
  for (int64_t k = 0; k < runs; ++k) mask_range_of(base, p, keep, mask, k * run, std::min(n, (k + 1) * run));
}

template <class T>
void dropout_apply(const T* mask, T* x, int64_t n) {
#pragma omp parallel for schedule(static) if (worth_threads_elementwise(n))
  for (int64_t i = 0; i < n; ++i) x[i] *= mask[i];
}

template void dropout_mask<float>(uint64_t, double, float*, int64_t);
template void dropout_mask<double>(uint64_t, double, double*, int64_t);
template void dropout_apply<float>(const float*, float*, int64_t);
template void dropout_apply<double>(const double*, double*, int64_t);

}  // namespace attn::nn
