// The Transformer encoder layer's forward and backward passes (see encoder_block.hpp).
#include "nn/encoder_block.hpp"

#include <cstddef>

#include "attn/error.hpp"
#include "nn/dropout.hpp"
#include "nn/layer_norm.hpp"
#include "nn/linear_layer.hpp"
#include "nn/scratch.hpp"

namespace attn::nn {

namespace {

// The residual dropout masks of a block (empty when it drops nothing): mask k of seed's.
template <class T>
void residual_masks(double p, uint64_t seed, int64_t n, std::initializer_list<std::vector<T>*> masks) {
  int salt = 0;
  for (std::vector<T>* m : masks) {
    ++salt;
    if (!(p > 0) || seed == 0) {
      m->clear();
      continue;
    }
    m->resize(static_cast<std::size_t>(n));
    dropout_mask(seed_for(seed, salt), p, m->data(), n);
  }
}

// Pre-norm: normed = LN₁(x); sum1 = x + attention(normed); h = LN₂(sum1);
// y = sum1 + W₂·relu(W₁·h + b₁) + b₂
template <class T>
void pre_norm_forward(const T* x, const encoder_block_weights<T>& w, T* y, encoder_block_cache<T>& c,
                      const encoder_block_shape& s, const attention_mask_spec& mask) {
  const int64_t n = s.attention.batch * s.attention.length, e = s.attention.width;
  const int64_t f = s.feedforward;
  const auto size = static_cast<std::size_t>(n * e);
  c.normed.resize(size);
  c.mean1.resize(static_cast<std::size_t>(n));
  c.rstd1.resize(static_cast<std::size_t>(n));
  layer_norm_forward(x, w.norm1_weight, w.norm1_bias, c.normed.data(), c.mean1.data(),
                     c.rstd1.data(), n, e);
  residual_masks(s.dropout, s.dropout_seed, n * e, {&c.drop1, &c.drop2});
  c.sum1.resize(size);
  self_attention_forward(c.normed.data(), w.attention, c.sum1.data(), c.attention, s.attention, mask);
  if (!c.drop1.empty()) dropout_apply(c.drop1.data(), c.sum1.data(), n * e);
  add_into(c.sum1.data(), x, n * e);
  c.h.resize(size);
  c.mean2.resize(static_cast<std::size_t>(n));
  c.rstd2.resize(static_cast<std::size_t>(n));
  layer_norm_forward(c.sum1.data(), w.norm2_weight, w.norm2_bias, c.h.data(), c.mean2.data(),
                     c.rstd2.data(), n, e);
  c.pre.resize(static_cast<std::size_t>(n * f));
  c.act.resize(c.pre.size());
  linear_forward(c.h.data(), w.linear1_weight, w.linear1_bias, c.pre.data(), n, e, f);
  relu_forward(c.pre.data(), c.act.data(), n * f);
  linear_forward(c.act.data(), w.linear2_weight, w.linear2_bias, y, n, f, e);
  if (!c.drop2.empty()) dropout_apply(c.drop2.data(), y, n * e);
  add_into(y, c.sum1.data(), n * e);
}

template <class T>
void pre_norm_backward(const T* dy, const T* x, const encoder_block_weights<T>& w,
                       const encoder_block_cache<T>& c, T* dx, const encoder_block_grads<T>& g,
                       const encoder_block_shape& s, const attention_mask_spec& mask) {
  const int64_t n = s.attention.batch * s.attention.length, e = s.attention.width;
  const int64_t f = s.feedforward;
  // y = sum1 + act·W₂ᵀ + b₂: sum1 gets dy directly and through LN₂ and the feed-forward part
  // (the feed-forward's gradients are written, not added: its scratch needs no zeros)
  scratch<T> dact(static_cast<size_t>(n * f)), dh(static_cast<size_t>(n * e));
  // the feed-forward's output: through its dropout mask
  const scratch<T> dff = c.drop2.empty() ? scratch_copy(dy, n * e) : dropout_copy(c.drop2.data(), dy, n * e);
  linear_backward_writing_dx(dff.data(), c.act.data(), w.linear2_weight, dact.data(), g.dlinear2_weight,
                             g.dlinear2_bias, n, f, e);
  relu_backward_in_place(dact.data(), c.pre.data(), n * f);  // now the gradient of pre
  linear_backward_writing_dx(dact.data(), c.h.data(), w.linear1_weight, dh.data(), g.dlinear1_weight,
                             g.dlinear1_bias, n, e, f);
  scratch<T> dsum1 = scratch_copy(dy, n * e);
  layer_norm_backward(dh.data(), c.sum1.data(), w.norm2_weight, c.mean2.data(), c.rstd2.data(),
                      dsum1.data(), g.dnorm2_weight, g.dnorm2_bias, n, e);
  // sum1 = x + attention(normed): x gets dsum1 directly and through LN₁ and the attention
  scratch<T> dnormed = scratch_zeros<T>(n * e);
  // the attention's output: through its mask
  const scratch<T> dattended =
      c.drop1.empty() ? scratch_copy(dsum1.data(), n * e) : dropout_copy(c.drop1.data(), dsum1.data(), n * e);
  self_attention_backward(dattended.data(), c.normed.data(), w.attention, c.attention, dnormed.data(),
                          g.attention, s.attention, mask);
  if (dx == nullptr) {  // the weights' gradients still need LN₁'s
    scratch<T> unused = scratch_zeros<T>(n * e);
    layer_norm_backward(dnormed.data(), x, w.norm1_weight, c.mean1.data(), c.rstd1.data(),
                        unused.data(), g.dnorm1_weight, g.dnorm1_bias, n, e);
    return;
  }
  layer_norm_backward(dnormed.data(), x, w.norm1_weight, c.mean1.data(), c.rstd1.data(), dx,
                      g.dnorm1_weight, g.dnorm1_bias, n, e);
  add_into(dx, dsum1.data(), n * e);
}

}  // namespace

template <class T>
void encoder_block_forward(const T* x, const encoder_block_weights<T>& w, T* y,
                           encoder_block_cache<T>& c, const encoder_block_shape& s,
                           const attention_mask_spec& mask) {
  if (s.norm_first) {
    pre_norm_forward(x, w, y, c, s, mask);
    return;
  }
  if (s.dropout > 0 && s.dropout_seed != 0) throw_usage("residual dropout is the pre-norm blocks'");
  const int64_t n = s.attention.batch * s.attention.length, e = s.attention.width;
  const int64_t f = s.feedforward;
  const auto size = static_cast<std::size_t>(n * e);
  // sum1 = x + attention(x); h = LayerNorm₁(sum1)
  c.sum1.resize(size);
  self_attention_forward(x, w.attention, c.sum1.data(), c.attention, s.attention, mask);
  add_into(c.sum1.data(), x, n * e);
  c.h.resize(size);
  c.mean1.resize(static_cast<std::size_t>(n));
  c.rstd1.resize(static_cast<std::size_t>(n));
  layer_norm_forward(c.sum1.data(), w.norm1_weight, w.norm1_bias, c.h.data(), c.mean1.data(),
                     c.rstd1.data(), n, e);
  // sum2 = h + W₂·relu(W₁·h + b₁) + b₂; y = LayerNorm₂(sum2)
  c.pre.resize(static_cast<std::size_t>(n * f));
  c.act.resize(c.pre.size());
  linear_forward(c.h.data(), w.linear1_weight, w.linear1_bias, c.pre.data(), n, e, f);
  relu_forward(c.pre.data(), c.act.data(), n * f);
  c.sum2.resize(size);
  linear_forward(c.act.data(), w.linear2_weight, w.linear2_bias, c.sum2.data(), n, f, e);
  add_into(c.sum2.data(), c.h.data(), n * e);
  c.mean2.resize(static_cast<std::size_t>(n));
  c.rstd2.resize(static_cast<std::size_t>(n));
  layer_norm_forward(c.sum2.data(), w.norm2_weight, w.norm2_bias, y, c.mean2.data(),
                     c.rstd2.data(), n, e);
}

template <class T>
void encoder_block_backward(const T* dy, const T* x, const encoder_block_weights<T>& w,
                            const encoder_block_cache<T>& c, T* dx,
                            const encoder_block_grads<T>& g, const encoder_block_shape& s,
                            const attention_mask_spec& mask) {
  if (s.norm_first) {
    pre_norm_backward(dy, x, w, c, dx, g, s, mask);
    return;
  }
  const int64_t n = s.attention.batch * s.attention.length, e = s.attention.width;
  const int64_t f = s.feedforward;
  // y = LayerNorm₂(sum2)
  scratch<T> dsum2 = scratch_zeros<T>(n * e);
  layer_norm_backward(dy, c.sum2.data(), w.norm2_weight, c.mean2.data(), c.rstd2.data(),
                      dsum2.data(), g.dnorm2_weight, g.dnorm2_bias, n, e);
  // sum2 = h + act·W₂ᵀ + b₂: h gets dsum2 directly and through the feed-forward part
  scratch<T> dh = scratch_copy(dsum2.data(), n * e), dact = scratch_zeros<T>(n * f),
             dpre = scratch_zeros<T>(n * f);
  linear_backward(dsum2.data(), c.act.data(), w.linear2_weight, dact.data(), g.dlinear2_weight,
                  g.dlinear2_bias, n, f, e);
  relu_backward(dact.data(), c.pre.data(), dpre.data(), n * f);  // act = relu(pre)
  linear_backward(dpre.data(), c.h.data(), w.linear1_weight, dh.data(), g.dlinear1_weight,
                  g.dlinear1_bias, n, e, f);                     // pre = h·W₁ᵀ + b₁
  // h = LayerNorm₁(sum1)
  scratch<T> dsum1 = scratch_zeros<T>(n * e);
  layer_norm_backward(dh.data(), c.sum1.data(), w.norm1_weight, c.mean1.data(), c.rstd1.data(),
                      dsum1.data(), g.dnorm1_weight, g.dnorm1_bias, n, e);
  // sum1 = x + attention(x)
  self_attention_backward(dsum1.data(), x, w.attention, c.attention, dx, g.attention,
                          s.attention, mask);
  if (dx != nullptr) add_into(dx, dsum1.data(), n * e);
}

#define ATTN_INSTANTIATE(T)                                                                     \
  template void encoder_block_forward<T>(const T*, const encoder_block_weights<T>&, T*,        \
                                         encoder_block_cache<T>&, const encoder_block_shape&,  \
                                         const attention_mask_spec&);                          \
  template void encoder_block_backward<T>(const T*, const T*, const encoder_block_weights<T>&, \
                                          const encoder_block_cache<T>&, T*,                   \
                                          const encoder_block_grads<T>&,                       \
                                          const encoder_block_shape&,                          \
                                          const attention_mask_spec&);
ATTN_INSTANTIATE(float)
ATTN_INSTANTIATE(double)
#undef ATTN_INSTANTIATE

void encoder_block_row_forward(float* x, const encoder_block_weights<float>& w,
                               self_attention_kv& kv, int64_t t, const encoder_block_shape& s,
                               encoder_block_row_scratch& r) {
  if (!s.norm_first) throw_usage("the one-row path is the pre-norm block's (a language model's)");
  const int64_t e = s.attention.width, f = s.feedforward;
  for (auto* v : {&r.normed, &r.attended}) v->resize(static_cast<std::size_t>(e));
  r.pre.resize(static_cast<std::size_t>(f));
  r.mean.resize(1);
  r.rstd.resize(1);
  // x += attention(LN₁(x)), the query at t against the keys of 0 … t
  layer_norm_forward(x, w.norm1_weight, w.norm1_bias, r.normed.data(), r.mean.data(), r.rstd.data(),
                     int64_t{1}, e);
  self_attention_row_forward(r.normed.data(), w.attention, r.attended.data(), kv, t, s.attention,
                             r.attention);
  for (int64_t j = 0; j < e; ++j) x[j] += r.attended[static_cast<std::size_t>(j)];
  // x += W₂·relu(W₁·LN₂(x) + b₁) + b₂
  layer_norm_forward(x, w.norm2_weight, w.norm2_bias, r.normed.data(), r.mean.data(), r.rstd.data(),
                     int64_t{1}, e);
  linear_row_forward(r.normed.data(), w.linear1_weight, w.linear1_bias, r.pre.data(), e, f);
  relu_forward(r.pre.data(), r.pre.data(), f);
  linear_row_forward(r.pre.data(), w.linear2_weight, w.linear2_bias, r.attended.data(), f, e);
  for (int64_t j = 0; j < e; ++j) x[j] += r.attended[static_cast<std::size_t>(j)];
}

}  // namespace attn::nn
