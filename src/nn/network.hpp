// The trainable text model (seed 003's simple language model, generalised):
//   token ids [B, L] → embeddings [B, L, Ein] (+ learned positions) → dropout →
//   (window > 0: a word window, each token with its neighbours, word_window.hpp) →
//   layers = 0: the seeds' multi-head self-attention [B, L, E] (no residual, norm or
//               feed-forward: the layer of seed 003, and the reference in the tests)
//   layers = N: N Transformer encoder layers (encoder_block.hpp) [B, L, E]
// → pooled over tokens (mean, max, both side by side, or attention pooling) [R, P] → dropout → linear → ReLU →
// linear → logits [R, C] → softmax cross-entropy. A classifier pools each sentence once (R = B);
// the next-word model runs causal attention and pools every prefix, so one pass trains every
// prefix of every line. The masked-word model (tied output) picks the hidden tokens' vectors
// [R, E] → linear [R, Ein] → scores against the output words' own embedding rows (+ a bias per
// word) → logits [R, C]: no output matrix to learn, so a large vocabulary stays cheap. Templated on the scalar: float trains, double is the specification for
// gradient checks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "attn/tensor.hpp"
#include "nn/adaptive_output.hpp"
#include "nn/encoder_block.hpp"
#include "nn/fused_output.hpp"
#include "nn/mean_pool.hpp"
#include "nn/self_attention_layer.hpp"
#include "nn/word_window.hpp"

namespace attn::nn {

enum class pool_kind { mean, max, mean_max, attention, token };

struct network_shape {
  int64_t vocabulary = 0;  // rows of the (pre-trained or learned) embedding table
  int64_t new_words = 0;   // rows learned for words the pre-trained table lacks (ids after it)
  int64_t embed = 0;       // Ein, the embedding width
  int64_t width = 0;       // E, the attention width
  int64_t heads = 1;       // H
  int64_t layers = 0;      // 0: the seeds' bare attention layer; N: N encoder layers (Ein == E)
  int64_t feedforward = 0; // the encoder layers' feed-forward width
  // Encoder layers pre-norm (PyTorch's norm_first=True, GPT-2's blocks), followed by a final
  // LayerNorm (GPT-2's ln_f, PyTorch's TransformerEncoder(norm=…)), since the residual stream
  // leaves the last block unnormalised.
  bool norm_first = false;
  pool_kind pool = pool_kind::mean;
  int64_t hidden = 0;      // the MLP's hidden width
  int64_t classes = 0;     // C: output words or labels
  int64_t positions = 0;   // rows of the learned positional table; 0 = none
  int64_t window = 0;      // tokens per word window before the attention (Ein → Ein); 0 = none
  bool causal = false;     // next-word: query t sees tokens ≤ t
  bool train_embeddings = true;  // the table's rows (new words' rows always train)
  double dropout = 0;      // on the embeddings and on the pooled vector, while training
  // Tied output (the masked-word model; pool = token, hidden = embed): class c scores
  // hidden·table[output_rows[c]] + bias[c] (network's output_rows), the table being the
  // embedding rows (new words' rows after the vocabulary's, as ids are).
  bool tied_output = false;

  int64_t pooled() const { return pool == pool_kind::mean_max ? 2 * width : width; }
};

template <class T>
struct parameter {
  std::string name;  // as saved in the model file
  shape_t shape;
  std::vector<T> value, grad;
  bool trainable = true;
  bool decay = false;  // weight decay applies to matrices, not to biases or embeddings
  // Embedding tables: a batch reaches few of their rows, so the gradient is kept row-sparse.
  // Only the rows listed in `touched` (sorted, distinct) can be nonzero in grad; zero_grad,
  // clipping and the optimiser visit just those (width row_width each).
  int64_t row_width = 0;  // > 0: row-sparse
  std::vector<int64_t> touched;

  bool sparse() const { return row_width > 0; }
  // Adds rows to touched (any order, repeats allowed).
  void touch(const std::vector<int64_t>& rows);
  // grad = 0 (the touched rows only, when row-sparse).
  void clear_grad();
};

// One padded batch: ids [B, L] (-1 after each sequence's end), the pooled rows and their
// target classes.
struct batch {
  int64_t size = 0, length = 0;
  std::vector<int64_t> ids, lengths;
  std::vector<pool_row> rows;
  std::vector<int64_t> targets;  // [R]
  int64_t tokens() const;        // real (unpadded) tokens
};

template <class T>
struct attention_parameters {
  parameter<T> wq, bq, wk, bk, wv, bv, wo, bo;
  self_attention_weights<T> weights() const;
  self_attention_grads<T> grads();
};

template <class T>
struct encoder_parameters {
  attention_parameters<T> attention;
  parameter<T> norm1_weight, norm1_bias, linear1_weight, linear1_bias;
  parameter<T> linear2_weight, linear2_bias, norm2_weight, norm2_bias;
  encoder_block_weights<T> weights() const;
  encoder_block_grads<T> grads();
};

template <class T>
struct network_cache {
  std::vector<T> x;  // embeddings (+ positions, after dropout) [B, L, Ein]
  word_window_cache<T> window;  // window > 0
  std::vector<T> windowed;      // the word window's output, the attention's input [B, L, Ein]
  self_attention_cache<T> attention;           // layers = 0
  std::vector<encoder_block_cache<T>> blocks;  // layers = N
  std::vector<std::vector<T>> between;         // encoder layers' outputs but the last [B, L, E]
  std::vector<T> stack, final_mean, final_rstd;  // pre-norm: the last block's output, before the
                                                 // final norm, and the norm's statistics
  std::vector<T> y;                 // the last attention block's output [B, L, E]
  std::vector<T> pooled;            // [R, P] (after dropout)
  std::vector<int64_t> argmax;      // max pooling: the token of each maximum [R, E]
  std::vector<T> pool_weights;      // attention pooling: each row's weights over tokens [R, L]
  std::vector<T> drop_x, drop_pooled;  // dropout masks (empty: no dropout)
  std::vector<T> pre, hidden;       // the MLP's hidden layer before and after ReLU [R, hidden]
  std::vector<T> output_table;      // tied output: the output words' embedding rows [C, Ein]
  // The frozen table output_table's rows were gathered from (null: none kept). A frozen table is
  // never written once training starts, so the next forward with this cache gathers only the
  // trainable rows (learned words) again: the 30,000-word table is 12 MB a step otherwise.
  const T* output_table_frozen_from = nullptr;
  std::vector<T> logits;            // [R, C]; the adaptive softmax: each class's log-probability,
                                    // filled when evaluating only (training scores its pieces and
                                    // leaves it as it was)
  adaptive_output_cache<T> adaptive;  // the adaptive softmax's pieces (backward's input)
  std::vector<T> token_scores;      // the adaptive softmax's cluster tokens [R, K] (evaluating)
  std::vector<T> row_lse;           // each row's log-sum-exp [R] (the loss's, for backward)
  // Backward's scratch for the output's gradients, its largest arrays ([R, C] and [C, Ein]: 268 MB
  // a step for a 16k-word language model; with a frozen table's adaptive output dtable holds only
  // the learned words' rows, [M, Ein]), kept so that each step reuses the memory instead of
  // faulting in and zeroing fresh pages. Not part of the forward's results.
  mutable std::vector<T> dlogits, dtable;
  // Training the full softmax's tied output in float: forward takes the loss and the output's
  // gradients in one pass (fused_output.hpp) and leaves them here for backward, with logits and
  // row_lse left empty (output_fused true).
  bool output_fused = false;
  std::vector<T> dhidden_fused, dbias_fused;  // [R, E], [C]; dtable above holds dtable
  fused_output_scratch fused_scratch;

  // The last block's attention (its per-head Q, K, V and row log-sum-exp).
  const self_attention_cache<T>& last_attention() const {
    return blocks.empty() ? attention : blocks.back().attention;
  }
};

template <class T>
class network {
 public:
  // Every parameter zero. output_rows: with tied_output, each class's embedding row [C];
  // output_cutoffs: with tied_output, the adaptive softmax's cuts c₀ < … < cₙ ≤ C over the classes
  // (most frequent first; adaptive_output.hpp), or none for the full softmax.
  explicit network(const network_shape& shape, std::vector<int64_t> output_rows = {},
                   std::vector<int64_t> output_cutoffs = {});

  const network_shape& shape() const { return shape_; }
  // The tied output's three products (the logits, and their gradients for the hidden rows and
  // the table) on bf16 operands with float32 sums, as PyTorch's autocast runs them: a training
  // choice (attn train --dtype bf16), not part of the model; off, every product is float32.
  void set_output_bf16(bool on) { output_bf16_ = on; }
  // Tied output: each class's embedding row.
  const std::vector<int64_t>& output_rows() const { return output_rows_; }
  bool adaptive() const { return !output_cutoffs_.empty(); }
  // The adaptive softmax's cuts (adaptive() only).
  adaptive_cuts cuts() const { return {output_cutoffs_, shape_.classes}; }
  // Every parameter in a fixed order (the new words' and positional tables only when present).
  std::vector<parameter<T>*> parameters();
  std::vector<const parameter<T>*> parameters() const;

  // Fills cache (logits included) and returns the mean cross-entropy over the batch's rows
  // (0 when it has none or no targets). A nonzero dropout_seed trains: dropout draws its masks
  // from it; 0 evaluates.
  T forward(const batch& b, network_cache<T>& cache, uint64_t dropout_seed = 0) const;
  // Adds the gradients of forward's loss to each trainable parameter's grad.
  void backward(const batch& b, const network_cache<T>& cache);
  void zero_grad();

  parameter<T> embedding, new_words, position;
  parameter<T> window_weight, window_bias;      // window > 0: [Ein, window·Ein], [Ein]
  attention_parameters<T> attention;            // layers = 0
  std::vector<encoder_parameters<T>> layers;    // layers = N
  parameter<T> final_norm_weight, final_norm_bias;  // pre-norm layers: [E]
  parameter<T> pool_query;                      // attention pooling's u [E]
  parameter<T> w1, b1, w2, b2;                  // the MLP head (tied output: w1, b1 map to
                                                // the embedding width, b2 is the words' bias)
  parameter<T> token_weight, token_bias;        // the adaptive softmax's cluster tokens [K, Ein], [K]

 private:
  self_attention_shape attention_shape(const batch& b) const;
  attention_mask_spec mask(const batch& b) const;
  word_window_shape window_shape(const batch& b) const;
  // Whether the tied output's gradient reaches a trainable embedding row.
  bool output_rows_train() const;
  // The tied output as an adaptive softmax: forward from cache.hidden and cache.output_table (each
  // class's log-probability in cache.logits unless training), backward to hidden's gradient.
  T adaptive_forward(const batch& b, network_cache<T>& cache, bool training) const;
  // cache.output_table = table[output_rows], a frozen table's rows kept from the last forward.
  void gather_output_table(network_cache<T>& cache) const;
  // The full softmax's tied output while training in float32: loss and gradients in one pass.
  bool fuses_output(const batch& b, uint64_t dropout_seed) const;
  T fused_output_forward(const batch& b, network_cache<T>& cache) const;
  std::vector<T> adaptive_backward(const batch& b, const network_cache<T>& cache,
                                   std::vector<int64_t>& table_rows, std::vector<int64_t>& new_rows);
  // The tied output's gradient dtable [C, Ein] taken back to the embedding rows it came from
  // (the rows given one listed in table_rows and new_rows).
  void output_rows_backward(const std::vector<T>& dtable, std::vector<int64_t>& table_rows,
                            std::vector<int64_t>& new_rows);

  network_shape shape_;
  std::vector<int64_t> output_rows_, output_cutoffs_;
  bool output_bf16_ = false;
};

}  // namespace attn::nn
