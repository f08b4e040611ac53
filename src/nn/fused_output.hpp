// A tied softmax output's loss and gradients in one pass, a block of rows at a time.
//
// Unfused, a language model's output writes its logits [R, C] (C the vocabulary: 64 MB for
// 4,096 rows of 3,932 words), reads them back for the loss, again to write dlogits [R, C],
// and twice more while packing dlogits for the two gradient products: five trips through main
// memory for a tenth of the step's arithmetic. Here each thread takes a block of rows small
// enough that its logits stay in its own cache, and does everything to them there: the logits'
// product, the loss, the gradient written over the logits, then the block's share of dhidden
// and of dtable. Nothing [R, C] is ever stored. (The same idea as the fused cross-entropy
// kernels of llm.c and of Liger, on a CPU's caches.)
//
// The results are the unfused path's up to float rounding (tested against a double
// computation); the blocks are dealt to a fixed number of lanes, each summing its share of the
// table's and the bias's gradients in its own arrays, added in lane order: the same bits on any
// thread count, as the rest of training (up to `fused_output_lanes` threads share the work).
#pragma once

#include <cstdint>
#include <vector>

namespace attn::nn {

struct fused_output_scratch {
  std::vector<float> logits;      // each thread's block of logits, then of their gradients
  std::vector<float> table_sums;  // threads after the first: their share of dtable
  std::vector<float> bias_sums;   // each thread's share of dbias
};

// hidden [R, E], table [C, E] (the output words' rows), bias [C] (or null), targets [R] (each
// in [0, C)) → returns the mean over rows of −log softmax(hidden·tableᵀ + bias)[target], and
// writes its gradients: dhidden [R, E] (overwritten), dtable [C, E] (overwritten; null: not
// wanted, as for frozen rows), dbias [C] (added to; null: not wanted).
float fused_output_loss_and_gradients(const float* hidden, const float* table, const float* bias,
                                      const int64_t* targets, int64_t rows, int64_t width,
                                      int64_t classes, float* dhidden, float* dtable, float* dbias,
                                      fused_output_scratch& scratch);

// Whether fusing pays at this vocabulary and width. Each block adds its share of dtable into
// a [C, E] array, so the traffic of those sums grows as C² · E while the logits' saved trips
// grow as C: measured by bench/fused_output (4,096 rows, 2 threads, docs/LM.md), fused ran
// 1.24× as fast at C 3,932 × E 100, 1.17× at 6,000 × 100, 1.06× at 10,000 × 100, 0.77× at
// 16,384 × 100, and 0.99× at 3,932 × 256 (a wider output's products already run near the
// kernel's speed). So: tables of at most 600,000 floats, at most 128 wide.
inline bool fused_output_pays(int64_t classes, int64_t width) {
  return width <= 128 && classes * width <= 600000;
}

// How many lanes the blocks are dealt to (at most that many threads work at once).
inline constexpr int64_t fused_output_lanes = 4;

// The rows a block holds for a vocabulary of `classes` words (its logits fill about half of a
// 1 MB L2 cache; between 16 and 256 rows).
int64_t fused_output_block_rows(int64_t classes);

}  // namespace attn::nn
