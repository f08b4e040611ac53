// The tied softmax output of a language-model training step, both ways attn can take it,
// interleaved, with the FMA peak measured in the same run:
//   unfused  logits [R, V] = hidden·tableᵀ + bias, the cross-entropy forward (each row's
//            log-sum-exp), its backward (dlogits [R, V], the bias's gradient), dhidden =
//            dlogits·table, dtable = dlogitsᵀ·hidden: the network's path before the fused one,
//            and its path for evaluating and for bf16 products
//   fused    nn::fused_output_loss_and_gradients: the same, a block of rows at a time in cache
// Both do 6·R·V·E FLOPs (three products of 2·R·V·E); shares are of the measured peak.
//
//   g++ -O2 -std=c++20 -fopenmp -Isrc -Iinclude bench/fused_output/fused_vs_unfused.cpp build/lib/libattn.a -lfmt -o /tmp/fused_vs_unfused
//   /tmp/fused_vs_unfused [R V E [rounds]]      (default: 4096 3932 100, the book's shape; 7 rounds)
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "attn/cpu.hpp"
#include "nn/cross_entropy.hpp"
#include "nn/dense.hpp"
#include "nn/fused_output.hpp"

int main(int argc, char** argv) {
  // R V E [rounds], or none: the book's shape
  const auto arg = [&](int i, int64_t otherwise) { return argc > 3 && argc > i ? std::atoll(argv[i]) : otherwise; };
  const int64_t r = arg(1, 4096), v = arg(2, 3932), e = arg(3, 100), rounds = arg(4, 7);
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 0.3f);
  std::vector<float> hidden(static_cast<size_t>(r * e)), table(static_cast<size_t>(v * e)), bias(static_cast<size_t>(v));
  for (auto* x : {&hidden, &table, &bias})
    for (float& y : *x) y = normal(rng);
  std::vector<int64_t> targets(static_cast<size_t>(r));
  std::uniform_int_distribution<int64_t> word(0, v - 1);
  for (int64_t& t : targets) t = word(rng);
  // the unfused path's arrays, kept from step to step as the network's cache keeps them
  std::vector<float> logits(static_cast<size_t>(r * v)), dlogits(logits.size()), lse(static_cast<size_t>(r)),
      dhidden(hidden.size()), dtable(table.size()), dbias(bias.size());
  attn::nn::fused_output_scratch scratch;
  float losses[2] = {0, 0};

  const auto unfused = [&] {
    attn::nn::gemm<float>(false, true, r, v, e, hidden.data(), table.data(), 0.0f, logits.data(), bias.data());
    losses[0] = attn::nn::cross_entropy_forward(logits.data(), targets.data(), nullptr, r, v, lse.data());
    std::fill(dbias.begin(), dbias.end(), 0.0f);
    attn::nn::cross_entropy_backward(logits.data(), targets.data(), dlogits.data(), r, v, 1.0f, lse.data(), dbias.data());
    attn::nn::gemm<float>(false, false, r, e, v, dlogits.data(), table.data(), 0.0f, dhidden.data());
    attn::nn::gemm<float>(true, false, v, e, r, dlogits.data(), hidden.data(), 0.0f, dtable.data());
  };
  const auto fused = [&] {
    std::fill(dbias.begin(), dbias.end(), 0.0f);
    losses[1] = attn::nn::fused_output_loss_and_gradients(hidden.data(), table.data(), bias.data(), targets.data(), r,
                                                          e, v, dhidden.data(), dtable.data(), dbias.data(), scratch);
  };

  const double peak = attn::measure_fma_peak_gflops(omp_get_max_threads(), 0.5);
  const double flops = 6.0 * double(r) * double(v) * double(e);
  std::printf("R %lld, V %lld, E %lld; %d threads; FMA peak %.0f GFLOP/s; block of %lld rows\n",
              static_cast<long long>(r), static_cast<long long>(v), static_cast<long long>(e), omp_get_max_threads(),
              peak, static_cast<long long>(attn::nn::fused_output_block_rows(v)));
  std::vector<double> times[2];
  for (int round = 0; round < rounds + 1; ++round) {  // round 0 warms up (and pages the arrays in)
    for (int way = 0; way < 2; ++way) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int rep = 0; rep < 3; ++rep) way == 0 ? unfused() : fused();
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / 3;
      if (round > 0) times[way].push_back(s);
    }
  }
  const char* names[2] = {"unfused", "fused"};
  double median[2];
  for (int way = 0; way < 2; ++way) {
    std::sort(times[way].begin(), times[way].end());
    median[way] = times[way][times[way].size() / 2];
    std::printf("%-8s %8.2f ms (min %.2f, max %.2f)  %6.1f GFLOP/s, %4.1f%% of the peak  loss %.6f\n", names[way],
                median[way] * 1e3, times[way].front() * 1e3, times[way].back() * 1e3, flops / median[way] * 1e-9,
                flops / median[way] * 1e-9 / peak * 100, losses[way]);
  }
  std::printf("fused / unfused: %.2fx as fast\n", median[0] / median[1]);
}
