// The tied output's three products of a language-model training step, float32 (kernels::gemm)
// against bf16 operands (kernels::gemm_bf16), interleaved, with the FMA peak measured in the
// same run: how much the bf16 lever of issue #28 can give. Shapes: R rows (batch × context), V
// output words, E width:
//   logits   [R, V] = hidden [R, E] · tableᵀ            (m R, n V, k E, B transposed)
//   dhidden  [R, E] = dlogits [R, V] · table [V, E]     (m R, n E, k V)
//   dtable   [V, E] = dlogitsᵀ · hidden                 (m V, n E, k R, A transposed)
//
//   g++ -O2 -std=c++20 -fopenmp -Isrc -Iinclude bench/gemm_bf16/output_products.cpp build/lib/libattn.a -lfmt -o /tmp/output_products
//   /tmp/output_products [R V E [rounds]]      (default: 4096 3934 100, the book's shape; 5 rounds)
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "attn/cpu.hpp"
#include "kernels/gemm.hpp"
#include "kernels/isa.hpp"

using attn::kernels::gemm_args;

int main(int argc, char** argv) {
  const int64_t r = argc > 3 ? std::atoll(argv[1]) : 4096, v = argc > 3 ? std::atoll(argv[2]) : 3934,
                e = argc > 3 ? std::atoll(argv[3]) : 100;
  const int rounds = argc > 4 ? std::atoi(argv[4]) : 5;
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> hidden(static_cast<size_t>(r * e)), table(static_cast<size_t>(v * e)),
      logits(static_cast<size_t>(r * v)), dhidden(hidden.size()), dtable(table.size());
  for (auto* x : {&hidden, &table, &logits})
    for (float& y : *x) y = normal(rng);
  struct product { const char* name; gemm_args g; };
  std::vector<product> products(3);
  products[0].name = "logits = hidden·tableᵀ";
  products[0].g.trans_b = true, products[0].g.m = r, products[0].g.n = v, products[0].g.k = e;
  products[0].g.a = hidden.data(), products[0].g.lda = e, products[0].g.b = table.data(), products[0].g.ldb = e;
  products[0].g.c = logits.data(), products[0].g.ldc = v;
  products[1].name = "dhidden = dlogits·table";
  products[1].g.m = r, products[1].g.n = e, products[1].g.k = v;
  products[1].g.a = logits.data(), products[1].g.lda = v, products[1].g.b = table.data(), products[1].g.ldb = e;
  products[1].g.c = dhidden.data(), products[1].g.ldc = e;
  products[2].name = "dtable = dlogitsᵀ·hidden";
  products[2].g.trans_a = true, products[2].g.m = v, products[2].g.n = e, products[2].g.k = r;
  products[2].g.a = logits.data(), products[2].g.lda = v, products[2].g.b = hidden.data(), products[2].g.ldb = e;
  products[2].g.c = dtable.data(), products[2].g.ldc = e;

  const double peak = attn::measure_fma_peak_gflops(omp_get_max_threads(), 0.5);
  std::printf("R %lld, V %lld, E %lld; %d threads; bf16 path %s; FMA peak %.0f GFLOP/s\n",
              static_cast<long long>(r), static_cast<long long>(v), static_cast<long long>(e),
              omp_get_max_threads(), attn::kernels::bf16_path_name(attn::kernels::selected_bf16_path()), peak);
  std::printf("%-28s %12s %12s %8s\n", "product", "fp32 GFLOP/s", "bf16 GFLOP/s", "ratio");
  double all32 = 0, all16 = 0;
  for (product& p : products) {
    const double flops = 2.0 * double(p.g.m) * double(p.g.n) * double(p.g.k);
    std::vector<double> t32, t16;
    for (int round = 0; round < rounds + 1; ++round) {  // round 0 warms up
      for (int bf16 = 0; bf16 < 2; ++bf16) {
        const auto t0 = std::chrono::steady_clock::now();
        for (int rep = 0; rep < 3; ++rep) (bf16 ? attn::kernels::gemm_bf16 : attn::kernels::gemm)(p.g);
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / 3;
        if (round > 0) (bf16 ? t16 : t32).push_back(s);
      }
    }
    std::sort(t32.begin(), t32.end());
    std::sort(t16.begin(), t16.end());
    const double m32 = t32[t32.size() / 2], m16 = t16[t16.size() / 2];
    all32 += m32, all16 += m16;
    std::printf("%-28s %8.1f (%2.0f%%) %8.1f (%2.0f%%) %7.2fx\n", p.name, flops / m32 * 1e-9, flops / m32 * 1e-9 / peak * 100,
                flops / m16 * 1e-9, flops / m16 * 1e-9 / peak * 100, m32 / m16);
  }
  std::printf("%-28s %12.2f ms %9.2f ms %7.2fx\n", "the three, one step", all32 * 1e3, all16 * 1e3, all32 / all16);
}
