// A named, trainable array of the model file (value and gradient side by side), and the
// parameter sets of the attention layers, in nn.MultiheadAttention's and
// nn.TransformerEncoderLayer's names.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "attn/tensor.hpp"
#include "nn/encoder_block.hpp"
#include "nn/self_attention_layer.hpp"

namespace attn::nn {

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

// A parameter of this name and shape, value and gradient zero.
template <class T>
parameter<T> make_parameter(std::string name, shape_t shape, bool decay);

template <class T>
struct attention_parameters {
  parameter<T> wq, bq, wk, bk, wv, bv, wo, bo;
  self_attention_weights<T> weights() const;
  self_attention_grads<T> grads();
  void append_to(std::vector<parameter<T>*>& all);  // in the model file's order
};

// nn.MultiheadAttention's names under a prefix ("attention." for the seeds' layer,
// "layers.N.attention." in an encoder layer): E outputs from `input` inputs.
template <class T>
attention_parameters<T> make_attention_parameters(const std::string& prefix, int64_t width, int64_t input);

template <class T>
struct encoder_parameters {
  attention_parameters<T> attention;
  parameter<T> norm1_weight, norm1_bias, linear1_weight, linear1_bias;
  parameter<T> linear2_weight, linear2_bias, norm2_weight, norm2_bias;
  encoder_block_weights<T> weights() const;
  encoder_block_grads<T> grads();
  void append_to(std::vector<parameter<T>*>& all);  // in the model file's order
};

// nn.TransformerEncoderLayer's names under "layers.N.": width E, feed-forward width F.
template <class T>
encoder_parameters<T> make_encoder_parameters(int64_t index, int64_t width, int64_t feedforward);

}  // namespace attn::nn
