// The tied output, fused: see fused_output.hpp for why and what.
#include "nn/fused_output.hpp"

#include <omp.h>

#include <algorithm>

#include "kernels/gemm.hpp"
#include "kernels/gemm_packed_b.hpp"
#include "nn/cross_entropy.hpp"

namespace attn::nn {

int64_t fused_output_block_rows(int64_t classes) {
  const int64_t fit = (int64_t{1} << 17) / std::max<int64_t>(classes, 1);  // 512 KB of floats
  return std::clamp<int64_t>(fit / 16 * 16, 16, 256);
}

float fused_output_loss_and_gradients(const float* hidden, const float* table, const float* bias,
                                      const int64_t* targets, int64_t rows, int64_t width,
                                      int64_t classes, float* dhidden, float* dtable, float* dbias,
                                      fused_output_scratch& scratch) {
  if (rows <= 0) return 0.0f;
  const int64_t block = fused_output_block_rows(classes);
  const int64_t blocks = (rows + block - 1) / block;
  // The blocks are dealt to a fixed number of lanes, each summing its blocks' dtable, dbias
  // and loss in its own arrays, added in lane order at the end: the bits depend on the rows
  // and vocabulary, never on the thread count (attn train writes the same model on one thread
  // or two). A lane is one thread's work at a time, so at most `lanes` threads share it.
  const int64_t lanes = std::min<int64_t>(fused_output_lanes, blocks);
  const bool small = rows * classes * width < (int64_t{1} << 22);  // a thread's wake-up costs more
  const int threads = small ? 1 : static_cast<int>(std::min<int64_t>(omp_get_max_threads(), lanes));
  const float scale = 1.0f / static_cast<float>(rows);

  // Both products' right-hand sides are the table: packed once here, not once per block.
  kernels::gemm_args logits{.trans_b = true, .n = classes, .k = width, .lda = width, .b = table,
                            .ldb = width, .ldc = classes, .bias = bias};  // z = h·tableᵀ + bias
  kernels::gemm_args back{.n = width, .k = classes, .lda = classes, .b = table, .ldb = width,
                          .ldc = width};  // dh = dz·table
  const kernels::packed_b table_t(logits), table_n(back);

  scratch.logits.resize(static_cast<size_t>(threads * block * classes));
  scratch.bias_sums.assign(static_cast<size_t>(lanes * classes), 0.0f);
  if (dtable != nullptr) scratch.table_sums.resize(static_cast<size_t>((lanes - 1) * classes * width));
  std::vector<double> losses(static_cast<size_t>(lanes), 0.0);

  // Lane l takes blocks l, l + lanes, l + 2·lanes, … in that order, its dtable share in dtable
  // itself (l = 0) or in its own array; z is the thread's block of logits.
  const auto run_lane = [&](int64_t l, float* z) {
    float* bias_sum = scratch.bias_sums.data() + l * classes;
    float* table_sum = l == 0 ? dtable : (dtable != nullptr ? scratch.table_sums.data() + (l - 1) * classes * width : nullptr);
    for (int64_t i = l; i < blocks; i += lanes) {
      const int64_t r0 = i * block, n = std::min(block, rows - r0);
      kernels::gemm_args g = logits;
      g.m = n, g.a = hidden + r0 * width, g.c = z;
      kernels::gemm(g, table_t);
      double loss = 0;
      for (int64_t r = 0; r < n; ++r)
        loss += cross_entropy_row_in_place(z + r * classes, targets[r0 + r], scale, classes, bias_sum);
      losses[static_cast<size_t>(l)] += loss;
      g = back;
      g.m = n, g.a = z, g.c = dhidden + r0 * width;
      kernels::gemm(g, table_n);
      if (table_sum != nullptr) {  // dtable += dzᵀ·h over the block's rows
        const kernels::gemm_args d{.trans_a = true, .m = classes, .n = width, .k = n, .a = z,
                                   .lda = classes, .b = hidden + r0 * width, .ldb = width,
                                   .beta = i == l ? 0.0f : 1.0f, .c = table_sum, .ldc = width};
        kernels::gemm(d);
      }
    }
  };
  if (threads == 1) {
    for (int64_t l = 0; l < lanes; ++l) run_lane(l, scratch.logits.data());
  } else {
#pragma omp parallel for schedule(static, 1) num_threads(threads)
    for (int64_t l = 0; l < lanes; ++l)
      run_lane(l, scratch.logits.data() + static_cast<size_t>(omp_get_thread_num()) * block * classes);
  }

  // The lanes' shares added in lane order.
  if (dtable != nullptr && lanes > 1) {
    const int64_t n = classes * width;
#pragma omp parallel for schedule(static) if (!small)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t l = 1; l < lanes; ++l) dtable[j] += scratch.table_sums[static_cast<size_t>((l - 1) * n + j)];
  }
  double total = 0;
  for (int64_t l = 0; l < lanes; ++l) {
    total += losses[static_cast<size_t>(l)];
    if (dbias != nullptr)
      for (int64_t j = 0; j < classes; ++j) dbias[j] += scratch.bias_sums[static_cast<size_t>(l * classes + j)];
  }
  return static_cast<float>(total / static_cast<double>(rows));
}

}  // namespace attn::nn
