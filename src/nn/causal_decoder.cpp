#include "nn/causal_decoder.hpp"

#include <algorithm>
#include <cmath>

#include "attn/error.hpp"
#include "kernels/exp_nonpositive.hpp"
#include "nn/embedding.hpp"
#include "nn/layer_norm.hpp"
#include "nn/linear_layer.hpp"  // relu_forward

namespace attn::nn {

namespace {

// y = W·x + b for one row (W [out, in]): a product per output, with no packing of W as the
// batched GEMM does (for one row that copy would cost as much as the product). The output
// table's thousands of rows are shared among the threads.
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
void matvec(const float* x, const float* w, const float* b, float* y, int64_t in, int64_t out) {
#pragma omp parallel for schedule(static) if (out * in >= (int64_t{1} << 18))
  for (int64_t o = 0; o < out; ++o) {
    const float* row = w + o * in;
    float sum = 0;
#pragma omp simd reduction(+ : sum)
    for (int64_t i = 0; i < in; ++i) sum += row[i] * x[i];
    y[o] = sum + (b != nullptr ? b[o] : 0.0f);
  }
}

// One head's query against its n cached keys and values, both stored dimension-major (row c of
// d holds that dimension for every position, `stride` apart): softmax(q·kⱼ·scale) weighting
// the values. Every loop runs along the positions, so it vectorises whatever d is and the
// row's cost grows as n/16 vector operations, not n short dot products.
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
void attend(const float* q, const float* keys, const float* values, float* out, int64_t n, int64_t d,
            int64_t stride, float scale, float* scores) {
  for (int64_t j = 0; j < n; ++j) scores[j] = 0;
  for (int64_t c = 0; c < d; ++c) {
    const float qc = q[c] * scale;
    const float* k = keys + c * stride;
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) scores[j] += qc * k[j];
  }
  float top = -INFINITY;
#pragma omp simd reduction(max : top)
  for (int64_t j = 0; j < n; ++j) top = std::max(top, scores[j]);
  float sum = 0;
#pragma omp simd reduction(+ : sum)
  for (int64_t j = 0; j < n; ++j) sum += scores[j] = kernels::exp_nonpositive(scores[j] - top);
  const float inverse = 1.0f / sum;
  for (int64_t c = 0; c < d; ++c) {
    const float* v = values + c * stride;
    float dot = 0;
#pragma omp simd reduction(+ : dot)
    for (int64_t j = 0; j < n; ++j) dot += scores[j] * v[j];
    out[c] = dot * inverse;
  }
}

}  // namespace

causal_decoder::causal_decoder(const network<float>& net) : net_(net) {
  const network_shape& s = net.shape();
  if (!s.causal || !s.tied_output || !s.norm_first || s.layers < 1 || s.window > 0 || s.positions < 1)
    throw_usage("generation needs a language model (train one with --task lm)");
  const std::vector<int64_t>& rows = net.output_rows();
  output_table_.resize(static_cast<size_t>(s.classes * s.embed));
  embedding_forward(rows.data(), net.trunk.embedding.value.data(), s.vocabulary, net.trunk.new_words.value.data(),
                    output_table_.data(), s.classes, s.embed);
  keys_.assign(static_cast<size_t>(s.layers), std::vector<float>(static_cast<size_t>(s.positions * s.width)));
  values_ = keys_;
  const auto e = static_cast<size_t>(s.width);
  for (auto* v : {&x_, &normed_, &q_, &k_, &v_, &merged_, &attended_, &hidden_})
    v->resize(e);
  pre_.resize(static_cast<size_t>(std::max(s.feedforward, s.hidden)));
  scores_.resize(static_cast<size_t>(s.positions));
  mean_.resize(1);
  rstd_.resize(1);
  logits_.resize(static_cast<size_t>(s.classes));
}

const std::vector<float>& causal_decoder::step(int64_t id) {
  const network_shape& s = net_.shape();
  if (length_ >= s.positions)
    throw_usage("the decoder's cache is full: the model has no position past its context");
  const int64_t t = length_, e = s.width, d = s.width / s.heads;
  // x = embedding[id] + position[t]
  embedding_forward(&id, net_.trunk.embedding.value.data(), s.vocabulary, net_.trunk.new_words.value.data(),
                    x_.data(), 1, s.embed);
  for (int64_t j = 0; j < e; ++j) x_[static_cast<size_t>(j)] += net_.trunk.position.value[static_cast<size_t>(t * e + j)];
  const auto scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d)));
  for (size_t layer = 0; layer < net_.trunk.layers.size(); ++layer) {
    const encoder_parameters<float>& p = net_.trunk.layers[layer];
    const attention_parameters<float>& a = p.attention;
    // x += attention(LayerNorm₁(x)), the query at t against the keys of 0 … t
    layer_norm_forward(x_.data(), p.norm1_weight.value.data(), p.norm1_bias.value.data(), normed_.data(),
                       mean_.data(), rstd_.data(), int64_t{1}, e);
    matvec(normed_.data(), a.wq.value.data(), a.bq.value.data(), q_.data(), e, e);
    // The new key and value join the cache as column t (dimension-major: [E, positions]).
    float* keys = keys_[layer].data();
    float* values = values_[layer].data();
    const int64_t stride = s.positions;
    matvec(normed_.data(), a.wk.value.data(), a.bk.value.data(), k_.data(), e, e);
    matvec(normed_.data(), a.wv.value.data(), a.bv.value.data(), v_.data(), e, e);
    for (int64_t j = 0; j < e; ++j) {
      keys[j * stride + t] = k_[static_cast<size_t>(j)];
      values[j * stride + t] = v_[static_cast<size_t>(j)];
    }
    for (int64_t h = 0; h < s.heads; ++h)
      attend(q_.data() + h * d, keys + h * d * stride, values + h * d * stride, merged_.data() + h * d, t + 1,
             d, stride, scale, scores_.data());
    matvec(merged_.data(), a.wo.value.data(), a.bo.value.data(), attended_.data(), e, e);
    for (int64_t j = 0; j < e; ++j) x_[static_cast<size_t>(j)] += attended_[static_cast<size_t>(j)];
    // x += W₂·relu(W₁·LayerNorm₂(x) + b₁) + b₂
    layer_norm_forward(x_.data(), p.norm2_weight.value.data(), p.norm2_bias.value.data(), normed_.data(),
                       mean_.data(), rstd_.data(), int64_t{1}, e);
    matvec(normed_.data(), p.linear1_weight.value.data(), p.linear1_bias.value.data(), pre_.data(), e, s.feedforward);
    relu_forward(pre_.data(), pre_.data(), s.feedforward);
    matvec(pre_.data(), p.linear2_weight.value.data(), p.linear2_bias.value.data(), attended_.data(), s.feedforward, e);
    for (int64_t j = 0; j < e; ++j) x_[static_cast<size_t>(j)] += attended_[static_cast<size_t>(j)];
  }
  // logits = (LayerNorm_f(x)·W₁ᵀ + b₁)·tableᵀ + b₂
  layer_norm_forward(x_.data(), net_.trunk.final_norm_weight.value.data(), net_.trunk.final_norm_bias.value.data(),
                     normed_.data(), mean_.data(), rstd_.data(), int64_t{1}, e);
  matvec(normed_.data(), net_.output.transform_weight.value.data(), net_.output.transform_bias.value.data(), hidden_.data(), e,
                 s.hidden);
  matvec(hidden_.data(), output_table_.data(), net_.output.bias.value.data(), logits_.data(), s.hidden, s.classes);
  if (net_.adaptive()) {  // scores → each class's log-probability, a softmax of the same distribution
    const adaptive_cuts cuts = net_.cuts();
    token_scores_.resize(static_cast<size_t>(cuts.clusters()));
    matvec(hidden_.data(), net_.output.cluster_weight.value.data(), net_.output.cluster_bias.value.data(),
           token_scores_.data(), s.hidden, cuts.clusters());
    adaptive_log_probabilities(logits_.data(), token_scores_.data(), int64_t{1}, cuts);
  }
  ++length_;
  return logits_;
}

}  // namespace attn::nn
