// The element-wise and row kernels of a training step on the GPU (training_kernels.cu), each the
// device twin of a CPU piece in src/nn/ (named beside it). The products are cuBLAS's
// (device_linear.hpp) and the attention is the flash kernels' (cuda_problem.hpp). Plain C++17
// declarations on device pointers; every launch goes on `stream` and none synchronises.
// Activations and gradients are float32 [rows, width], row-major, except those that only feed the
// products, kept in the products' element type `type` (float32, or bf16 under --dtype bf16: the
// attention's heads, the layer norms' outputs, the feed-forward part's activations, the logits).
#pragma once

#include <cstdint>

#include "cuda/cuda_problem.hpp"

namespace attn::cuda_kernels {

// nn::embedding_forward + positional_forward: x[i] = table[id] (id < split), extra[id − split]
// (id ≥ split) or 0 (id < 0), plus positions[i mod length] when positions is not null.
void embed_tokens(const int32_t* ids, const float* table, int64_t split, const float* extra,
                  const float* positions, float* x, int64_t tokens, int64_t length, int64_t width,
                  void* stream);
// nn::embedding_backward, deterministic: the tokens sorted by id (order [tokens], grouped by
// `starts` [unique + 1], the group's id in unique_ids) so that one block sums a row's tokens in
// order. dtable or dextra may be null (that table is frozen).
void embed_tokens_backward(const float* dx, const int32_t* order, const int32_t* starts,
                           const int32_t* unique_ids, int64_t unique, float* dtable, int64_t split,
                           float* dextra, int64_t width, void* stream);
// nn::positional_backward: dpositions[t] += Σ_b dx[b, t].
void positions_backward(const float* dx, float* dpositions, int64_t batch, int64_t length,
                        int64_t width, void* stream);
// table rows → out [count, width]: out[c] = table[rows[c]] or extra[rows[c] − split].
void gather_rows(const float* table, int64_t split, const float* extra, const int32_t* rows,
                 float* out, int64_t count, int64_t width, void* stream);
// The reverse, for rows listed once each: dtable[rows[c]] += d[c] (or dextra's).
void scatter_add_rows(const float* d, const int32_t* rows, float* dtable, int64_t split,
                      float* dextra, int64_t count, int64_t width, void* stream);

// nn::dropout_mask + dropout_apply with the CPU's counter-based hash: the same mask for the same
// seed, element for element. x *= mask (the backward is the same call on the gradient).
void dropout_apply(uint64_t seed, double p, float* x, int64_t n, void* stream);

// nn::layer_norm_forward (eps 1e-5): y = (x − mean)·rstd·weight + bias, row statistics kept; y
// written in float32 (when not null) and in `type` to y_product (when not null).
void layer_norm_forward(const float* x, const float* weight, const float* bias, float* y,
                        void* y_product, element type, float* mean, float* rstd, int64_t rows,
                        int64_t width, void* stream);
// nn::layer_norm_backward's input gradient: dx += (accumulate) or = the gradient through the norm.
void layer_norm_backward_input(const float* dy, const float* x, const float* weight,
                               const float* mean, const float* rstd, float* dx, bool accumulate,
                               int64_t rows, int64_t width, void* stream);
// Its weights' gradients: dweight += Σ_rows dy·x̂, dbias += Σ_rows dy. workspace: column_workspace
// floats (twice, for the two sums).
void layer_norm_backward_weights(const float* dy, const float* x, const float* mean,
                                 const float* rstd, float* dweight, float* dbias, float* workspace,
                                 int64_t rows, int64_t width, void* stream);
// A bias's gradient: dbias += Σ_rows d, d float32 or in `type` (in a fixed order: the same bits
// every run).
void column_sums(const void* d, element type, float* dbias, float* workspace, int64_t rows,
                 int64_t width, void* stream);
// Floats column_sums and layer_norm_backward_weights need as workspace for `width` columns.
int64_t column_workspace(int64_t width);

// y [rows, width] += bias (broadcast) and, when residual is not null, + residual.
void add_bias(float* y, const float* bias, const float* residual, int64_t rows, int64_t width,
              void* stream);
// act = relu(pre + bias), pre and act in `type`.
void bias_relu(const void* pre, const float* bias, void* act, element type, int64_t rows,
               int64_t width, void* stream);
// dpre = dact where act > 0, else 0 (act = relu(·) is positive exactly where its input was),
// all three in `type`.
void relu_backward(const void* dact, const void* act, void* dpre, element type, int64_t n,
                   void* stream);
// y += x.
void add_into(float* y, const float* x, int64_t n, void* stream);

// The heads' layout moves: rows [B·L, parts·E] (parts = 3: q, k, v side by side; 1: one tensor)
// ↔ heads [B, H, L, D] in `type`. rows_to_heads reads float32 rows (rows_in_type false) or rows in
// `type`, adding bias [parts·E] when it is not null; heads_to_rows writes rows in `type`.
void rows_to_heads(const void* rows, bool rows_in_type, const float* bias, int64_t parts,
                   void* const* heads, element type, int64_t batch, int64_t length,
                   int64_t heads_count, int64_t head_dim, void* stream);
void heads_to_rows(const void* const* heads, int64_t parts, void* rows, element type, int64_t batch,
                   int64_t length, int64_t heads_count, int64_t head_dim, void* stream);

// A key-padding mask for the flash kernels: mask [B, S] = 0 for j < lengths[b], −inf after.
void padding_mask(const int32_t* lengths, float* mask, int64_t batch, int64_t keys, void* stream);

// Token pooling: out[r] = y[index[r]] (rows of width); the backward dy[index[r]] += d[r]
// (indices distinct).
void gather_token_rows(const float* y, const int32_t* index, float* out, int64_t rows,
                       int64_t width, void* stream);
void scatter_token_rows(const float* d, const int32_t* index, float* dy, int64_t rows,
                        int64_t width, void* stream);

// Softmax cross-entropy over logits [R, C] (in `type`) + bias [C] against targets [R] (−1: no
// target, no loss), fused with its gradient: the logits become (softmax − one-hot)·scale in place;
// each row's loss goes to row_loss [R] (natural log). Then the rows' losses summed in a fixed
// order into loss_sum (one double).
void softmax_cross_entropy(void* logits, element type, const float* bias, const int32_t* targets,
                           float* row_loss, float scale, int64_t rows, int64_t classes, void* stream);
void sum_rows_loss(const float* row_loss, int64_t rows, double* loss_sum, void* stream);
// Held-out scoring (score_tally's rule): each row's cross-entropy and its target's rank, the
// classes scored above it (ties before it counted as above, as the argmax takes the first).
void score_rows(const void* logits, element type, const float* bias, const int32_t* targets, float* row_loss,
                int32_t* row_rank, int64_t rows, int64_t classes, void* stream);

// Gradient clipping by global norm and AdamW (train::clip_gradients, train::adamw), on one flat
// buffer of every trainable gradient: sum of squares (double, a fixed order) → clip_scale =
// max_norm / norm when the norm exceeds max_norm (> 0), else 1. workspace: 1024 doubles.
void clip_scale(const float* grads, int64_t n, double max_norm, double* workspace, float* scale,
                void* stream);
// m = β1·m + (1 − β1)·g, v = β2·v + (1 − β2)·g², w = w·decay − step_size·m / (√(v·inv_c2) + ε),
// with g = grad·(*scale).
void adamw_update(float* w, const float* grad, float* m, float* v, int64_t n, const float* scale,
                  float decay, float step_size, float inv_c2, float beta1, float beta2, float eps,
                  void* stream);

}  // namespace attn::cuda_kernels
