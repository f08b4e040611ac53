// The FMA peak: as many independent multiply-add chains as hide the FMA latency on both FMA
// pipes, nothing else in the loop. Compiled per instruction set with target attributes.
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <string>

#include "attn/cpu.hpp"

namespace attn {

namespace {

constexpr int chains = 16;  // ≥ latency (4) × pipes (2), with room to spare
volatile float sink_ = 0.0f;         // where the results go, so the loops are not optimised away

#if defined(__x86_64__)
// Every chain's lanes added up: the result the loops return, so none is optimised away.
__attribute__((target("avx512f"))) float sum_of_lanes(const __m512 (&acc)[chains]) {
  alignas(64) float lanes[16];
  float sum = 0.0f;
  for (int c = 0; c < chains; ++c) {
    _mm512_store_ps(lanes, acc[c]);
    for (float x : lanes) sum += x;
  }
  return sum;
}

__attribute__((target("avx512f"))) float fma_loop_avx512(long iterations) {
  __m512 acc[chains];
  for (int c = 0; c < chains; ++c) acc[c] = _mm512_set1_ps(0.001f * static_cast<float>(c));
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  for (long i = 0; i < iterations; ++i)
    for (int c = 0; c < chains; ++c) acc[c] = _mm512_fmadd_ps(acc[c], a, b);
  return sum_of_lanes(acc);
}

__attribute__((target("avx512f,avx512bf16"))) float bf16_loop_avx512(long iterations) {
  __m512 acc[chains];
  for (int c = 0; c < chains; ++c) acc[c] = _mm512_set1_ps(0.001f * static_cast<float>(c));
  // Small operands (2^-20 · 2^-20 per product): the chains grow slowly and never overflow.
  const __m512bh a = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-6f), _mm512_set1_ps(1e-6f));
  for (long i = 0; i < iterations; ++i)
    for (int c = 0; c < chains; ++c) acc[c] = _mm512_dpbf16_ps(acc[c], a, a);
  return sum_of_lanes(acc);
}

__attribute__((target("avx2,fma"))) float fma_loop_avx2(long iterations) {
  __m256 acc[chains];
  for (int c = 0; c < chains; ++c) acc[c] = _mm256_set1_ps(0.001f * static_cast<float>(c));
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  for (long i = 0; i < iterations; ++i)
    for (int c = 0; c < chains; ++c) acc[c] = _mm256_fmadd_ps(acc[c], a, b);
  alignas(32) float lanes[8];
  float sum = 0.0f;
  for (int c = 0; c < chains; ++c) {
    _mm256_store_ps(lanes, acc[c]);
    for (float x : lanes) sum += x;
  }
  return sum;
}
#endif

}  // namespace

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(" \t", colon + 1));
    }
  return "unknown";
}

namespace {

// FLOPs per iteration of one chain's loop on one thread: lanes × multiply-adds per lane × 2.
template <class Loop>
double peak_gflops(int threads, double seconds, double flops_per_iteration, Loop loop) {
  const auto run = [&](long iterations) {
    float total = 0.0f;
    const auto t0 = std::chrono::steady_clock::now();
#pragma omp parallel num_threads(threads) reduction(+ : total)
    total += loop(iterations);
    sink_ = total;  // keeps the loops alive
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  // Size the loop from a short trial, then keep the best of three (the peak is a ceiling).
  long iterations = 1 << 16;
  const double trial = run(iterations);
  iterations = static_cast<long>(static_cast<double>(iterations) * seconds / 3.0 / std::max(trial, 1e-6));
  double best = 0.0;
  for (int rep = 0; rep < 3; ++rep) {
    const double t = run(iterations);
    best = std::max(best, flops_per_iteration * chains * static_cast<double>(iterations) * threads / t / 1e9);
  }
  return best;
}

}  // namespace

double measure_fma_peak_gflops(int threads, double seconds) {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512f")) return peak_gflops(threads, seconds, 2.0 * 16, fma_loop_avx512);
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return peak_gflops(threads, seconds, 2.0 * 8, fma_loop_avx2);
#endif
  (void)threads;
  (void)seconds;
  return 0.0;
}

double measure_bf16_peak_gflops(int threads, double seconds) {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512bf16")) return peak_gflops(threads, seconds, 2.0 * 2 * 16, bf16_loop_avx512);
#endif
  (void)threads;
  (void)seconds;
  return 0.0;
}

}  // namespace attn
