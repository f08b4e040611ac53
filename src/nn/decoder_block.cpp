// The pre-norm Transformer decoder layer's forward and backward (see decoder_block.hpp).
#include "nn/decoder_block.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>

#include "nn/dropout.hpp"
#include "nn/layer_norm.hpp"
#include "nn/linear_layer.hpp"
#include "nn/scratch.hpp"

namespace attn::nn {

namespace {

attention_shape self_shape(const decoder_block_shape& s) {
  return {.batch = s.batch, .queries = s.target, .keys = s.target, .query_input = s.width, .key_input = s.width,
          .width = s.width, .heads = s.heads};
}

attention_shape cross_shape(const decoder_block_shape& s) {
  return {.batch = s.batch, .queries = s.target, .keys = s.source, .query_input = s.width, .key_input = s.width,
          .width = s.width, .heads = s.heads};
}

attention_mask_spec causal_mask() {
  attention_mask_spec m;
  m.causal = true;  // (target padding needs no mask: a real position never sees one after it)
  return m;
}

attention_mask_spec source_mask(const std::vector<int64_t>& lengths) {
  attention_mask_spec m;
  m.lengths = lengths;
  return m;
}

}  // namespace

template <class T>
void decoder_parameters<T>::append_to(std::vector<parameter<T>*>& all) {
  self_attention.append_to(all);
  cross_attention.append_to(all);
  for (parameter<T>* p : {&linear1_weight, &linear1_bias, &linear2_weight, &linear2_bias, &norm1_weight,
                          &norm1_bias, &norm2_weight, &norm2_bias, &norm3_weight, &norm3_bias})
    all.push_back(p);
}

template <class T>
decoder_parameters<T> make_decoder_parameters(const std::string& prefix, int64_t e, int64_t f) {
  decoder_parameters<T> d;
  d.self_attention = make_attention_parameters<T>(prefix + "self_attn.", e, e);
  d.cross_attention = make_attention_parameters<T>(prefix + "multihead_attn.", e, e);
  d.linear1_weight = make_parameter<T>(prefix + "linear1.weight", {f, e}, true);
  d.linear1_bias = make_parameter<T>(prefix + "linear1.bias", {f}, false);
  d.linear2_weight = make_parameter<T>(prefix + "linear2.weight", {e, f}, true);
  d.linear2_bias = make_parameter<T>(prefix + "linear2.bias", {e}, false);
  for (auto [weight, bias, name] : {std::tuple{&d.norm1_weight, &d.norm1_bias, "norm1"},
                                    std::tuple{&d.norm2_weight, &d.norm2_bias, "norm2"},
                                    std::tuple{&d.norm3_weight, &d.norm3_bias, "norm3"}}) {
    *weight = make_parameter<T>(prefix + name + ".weight", {e}, false);
    *bias = make_parameter<T>(prefix + name + ".bias", {e}, false);
  }
  return d;
}

template <class T>
void decoder_block_forward(const T* x, const T* memory, const std::vector<int64_t>& source_lengths,
                           const decoder_parameters<T>& w, T* y, decoder_block_cache<T>& c,
                           const decoder_block_shape& s) {
  const int64_t n = s.batch * s.target, e = s.width, f = s.feedforward;
  const auto rows = static_cast<std::size_t>(n * e);
  for (std::vector<T>* v : {&c.normed1, &c.sum1, &c.normed2, &c.sum2, &c.normed3}) v->resize(rows);
  for (std::vector<T>* v : {&c.mean1, &c.rstd1, &c.mean2, &c.rstd2, &c.mean3, &c.rstd3})
    v->resize(static_cast<std::size_t>(n));
  // Residual dropout's masks, one per sub-layer (none when not training).
  const bool dropping = s.dropout > 0 && s.dropout_seed != 0;
  int salt = 0;
  for (std::vector<T>* m : {&c.drop1, &c.drop2, &c.drop3}) {
    ++salt;
    m->resize(dropping ? rows : 0);
    if (dropping) dropout_mask(seed_for(s.dropout_seed, static_cast<uint64_t>(salt)), s.dropout, m->data(), n * e);
  }
  const auto drop = [&](const std::vector<T>& mask, T* out) {
    if (!mask.empty()) dropout_apply(mask.data(), out, n * e);
  };
  // sum1 = x + Dropout(SelfAttention(LN₁(x)))
  layer_norm_forward(x, w.norm1_weight.value.data(), w.norm1_bias.value.data(), c.normed1.data(), c.mean1.data(),
                     c.rstd1.data(), n, e);
  attention_forward(c.normed1.data(), c.normed1.data(), w.self_attention.weights(), c.sum1.data(), c.self_attention,
                    self_shape(s), causal_mask());
  drop(c.drop1, c.sum1.data());
  add_into(c.sum1.data(), x, n * e);
  // sum2 = sum1 + CrossAttention(LN₂(sum1), memory)
  layer_norm_forward(c.sum1.data(), w.norm2_weight.value.data(), w.norm2_bias.value.data(), c.normed2.data(),
                     c.mean2.data(), c.rstd2.data(), n, e);
  attention_forward(c.normed2.data(), memory, w.cross_attention.weights(), c.sum2.data(), c.cross_attention,
                    cross_shape(s), source_mask(source_lengths));
  drop(c.drop2, c.sum2.data());
  add_into(c.sum2.data(), c.sum1.data(), n * e);
  // y = sum2 + W₂·relu(W₁·LN₃(sum2) + b₁) + b₂
  layer_norm_forward(c.sum2.data(), w.norm3_weight.value.data(), w.norm3_bias.value.data(), c.normed3.data(),
                     c.mean3.data(), c.rstd3.data(), n, e);
  c.pre.resize(static_cast<std::size_t>(n * f));
  c.act.resize(c.pre.size());
  linear_forward(c.normed3.data(), w.linear1_weight.value.data(), w.linear1_bias.value.data(), c.pre.data(), n, e, f);
  relu_forward(c.pre.data(), c.act.data(), n * f);
  linear_forward(c.act.data(), w.linear2_weight.value.data(), w.linear2_bias.value.data(), y, n, f, e);
  drop(c.drop3, y);
  add_into(y, c.sum2.data(), n * e);
}

template <class T>
void decoder_block_backward(const T* dy, const T* x, const T* memory, const std::vector<int64_t>& source_lengths,
                            decoder_parameters<T>& w, const decoder_block_cache<T>& c, T* dx, T* dmemory,
                            const decoder_block_shape& s) {
  const int64_t n = s.batch * s.target, e = s.width, f = s.feedforward;
  // y = sum2 + feed-forward(LN₃(sum2)): sum2 gets dy directly and through LN₃
  // A sub-layer's output gradient: through its dropout mask (the residual's is not).
  const auto through = [&](const std::vector<T>& mask, const T* d) {
    return mask.empty() ? scratch_copy(d, n * e) : dropout_copy(mask.data(), d, n * e);
  };
  // The feed-forward's gradients are written, not added: its scratch needs no zeros
  scratch<T> dact(static_cast<std::size_t>(n * f)), dnormed(static_cast<std::size_t>(n * e));
  const scratch<T> dff = through(c.drop3, dy);
  linear_backward_writing_dx(dff.data(), c.act.data(), w.linear2_weight.value.data(), dact.data(),
                             w.linear2_weight.grad.data(), w.linear2_bias.grad.data(), n, f, e);
  relu_backward_in_place(dact.data(), c.pre.data(), n * f);  // now the gradient of pre
  linear_backward_writing_dx(dact.data(), c.normed3.data(), w.linear1_weight.value.data(), dnormed.data(),
                             w.linear1_weight.grad.data(), w.linear1_bias.grad.data(), n, e, f);
  scratch<T> dsum2 = scratch_copy(dy, n * e);
  layer_norm_backward(dnormed.data(), c.sum2.data(), w.norm3_weight.value.data(), c.mean3.data(), c.rstd3.data(),
                      dsum2.data(), w.norm3_weight.grad.data(), w.norm3_bias.grad.data(), n, e);
  // sum2 = sum1 + CrossAttention(LN₂(sum1), memory): the memory's gradient leaves here
  scratch<T> dnormed2 = scratch_zeros<T>(n * e);
  const scratch<T> dcross = through(c.drop2, dsum2.data());
  attention_backward(dcross.data(), c.normed2.data(), memory, w.cross_attention.weights(), c.cross_attention,
                     dnormed2.data(), dmemory, w.cross_attention.grads(), cross_shape(s), source_mask(source_lengths));
  scratch<T> dsum1 = scratch_copy(dsum2.data(), n * e);
  layer_norm_backward(dnormed2.data(), c.sum1.data(), w.norm2_weight.value.data(), c.mean2.data(), c.rstd2.data(),
                      dsum1.data(), w.norm2_weight.grad.data(), w.norm2_bias.grad.data(), n, e);
  // sum1 = x + SelfAttention(LN₁(x))
  scratch<T> dnormed1 = scratch_zeros<T>(n * e);
  const scratch<T> dself = through(c.drop1, dsum1.data());
  attention_backward(dself.data(), c.normed1.data(), c.normed1.data(), w.self_attention.weights(),
                     c.self_attention, dnormed1.data(), dnormed1.data(), w.self_attention.grads(), self_shape(s),
                     causal_mask());
  if (dx == nullptr) {  // the weights' gradients still need LN₁'s
    scratch<T> unused = scratch_zeros<T>(n * e);
    layer_norm_backward(dnormed1.data(), x, w.norm1_weight.value.data(), c.mean1.data(), c.rstd1.data(),
                        unused.data(), w.norm1_weight.grad.data(), w.norm1_bias.grad.data(), n, e);
    return;
  }
  layer_norm_backward(dnormed1.data(), x, w.norm1_weight.value.data(), c.mean1.data(), c.rstd1.data(), dx,
                      w.norm1_weight.grad.data(), w.norm1_bias.grad.data(), n, e);
  add_into(dx, dsum1.data(), n * e);
}

decoder_block_steps::decoder_block_steps(const decoder_parameters<float>& w, int64_t width, int64_t feedforward)
    : parameters(&w),
      self_out(w.self_attention.wo.value.data(), w.self_attention.bo.value.data(), width, width),
      cross_query(w.cross_attention.wq.value.data(), w.cross_attention.bq.value.data(), width, width),
      cross_out(w.cross_attention.wo.value.data(), w.cross_attention.bo.value.data(), width, width),
      linear1(w.linear1_weight.value.data(), w.linear1_bias.value.data(), feedforward, width),
      linear2(w.linear2_weight.value.data(), w.linear2_bias.value.data(), width, feedforward) {
  const attention_parameters<float>& a = w.self_attention;
  const rows_linear_part qkv[] = {{a.wq.value.data(), a.bq.value.data(), width},
                                  {a.wk.value.data(), a.bk.value.data(), width},
                                  {a.wv.value.data(), a.bv.value.data(), width}};
  self_qkv = rows_linear(qkv, width);
}

cross_keys_values cross_keys_values_forward(const float* memory, const decoder_parameters<float>& w, int64_t source,
                                            int64_t width, int64_t heads) {
  attention_cache<float> projected;
  attention_keys_values_forward(memory, w.cross_attention.weights(), projected,
                                {.batch = 1, .queries = 1, .keys = source, .query_input = width, .key_input = width,
                                 .width = width, .heads = heads});
  // [H, S, d] → each position's [E] (head h's dimension c at h·d + c)
  const int64_t d = width / heads;
  cross_keys_values c;
  c.reset(width, source);
  std::vector<float> k(static_cast<size_t>(width)), v(k.size());
  for (int64_t j = 0; j < source; ++j) {
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < d; ++i) {
        const auto from = static_cast<size_t>((h * source + j) * d + i);
        k[static_cast<size_t>(h * d + i)] = projected.k[from];
        v[static_cast<size_t>(h * d + i)] = projected.v[from];
      }
    c.append(k.data(), v.data());
  }
  return c;
}

void decoder_block_rows_forward(float* x, const decoder_block_steps& w, std::span<self_attention_kv* const> self_kv,
                                int64_t t, std::span<const cross_keys_values* const> cross,
                                const decoder_block_shape& s, decoder_block_row_scratch& r) {
  const decoder_parameters<float>& p = *w.parameters;
  const int64_t e = s.width, f = s.feedforward, rows = static_cast<int64_t>(self_kv.size());
  const int64_t d = e / s.heads;
  int64_t longest = 1;
  for (const cross_keys_values* c : cross) longest = std::max(longest, c->length);
  for (auto* v : {&r.normed, &r.attended, &r.query, &r.merged}) v->resize(static_cast<std::size_t>(rows * e));
  r.pre.resize(static_cast<std::size_t>(rows * f));
  r.mean.resize(static_cast<std::size_t>(rows));
  r.rstd.resize(static_cast<std::size_t>(rows));
  const int64_t blocks = (longest + keys_values::block - 1) / keys_values::block;
  r.scores.resize(static_cast<std::size_t>(blocks * keys_values::block));
  const auto add = [&] {
    for (int64_t j = 0; j < rows * e; ++j) x[j] += r.attended[static_cast<std::size_t>(j)];
  };
  // x += SelfAttention(LN₁(x)), each row's query at t against its own keys of 0 … t
  layer_norm_forward(x, p.norm1_weight.value.data(), p.norm1_bias.value.data(), r.normed.data(), r.mean.data(),
                     r.rstd.data(), rows, e);
  self_attention_rows_forward(r.normed.data(), w.self_qkv, w.self_out, r.attended.data(), self_kv, t,
                              {.batch = 1, .length = 1, .input = e, .width = e, .heads = s.heads}, r.self_attention);
  add();
  // x += CrossAttention(LN₂(x), memory): each row's query against its sentence's keys
  layer_norm_forward(x, p.norm2_weight.value.data(), p.norm2_bias.value.data(), r.normed.data(), r.mean.data(),
                     r.rstd.data(), rows, e);
  w.cross_query.apply(r.normed.data(), rows, r.query.data());
  const auto scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d)));
  for (int64_t row = 0; row < rows; ++row) {
    const cross_keys_values& c = *cross[static_cast<std::size_t>(row)];
    for (int64_t h = 0; h < s.heads; ++h)
      attend_cached(r.query.data() + row * e + h * d, c, h, d, scale, r.merged.data() + row * e + h * d,
                    r.scores.data());
  }
  w.cross_out.apply(r.merged.data(), rows, r.attended.data());
  add();
  // x += W₂·relu(W₁·LN₃(x) + b₁) + b₂
  layer_norm_forward(x, p.norm3_weight.value.data(), p.norm3_bias.value.data(), r.normed.data(), r.mean.data(),
                     r.rstd.data(), rows, e);
  w.linear1.apply(r.normed.data(), rows, r.pre.data());
  relu_forward(r.pre.data(), r.pre.data(), rows * f);
  w.linear2.apply(r.pre.data(), rows, r.attended.data());
  add();
}

#define ATTN_INSTANTIATE(T)                                                                                      \
  template struct decoder_parameters<T>;                                                                         \
  template decoder_parameters<T> make_decoder_parameters<T>(const std::string&, int64_t, int64_t);              \
  template void decoder_block_forward<T>(const T*, const T*, const std::vector<int64_t>&,                       \
                                         const decoder_parameters<T>&, T*, decoder_block_cache<T>&,             \
                                         const decoder_block_shape&);                                           \
  template void decoder_block_backward<T>(const T*, const T*, const T*, const std::vector<int64_t>&,            \
                                          decoder_parameters<T>&, const decoder_block_cache<T>&, T*, T*,        \
                                          const decoder_block_shape&);
ATTN_INSTANTIATE(float)
ATTN_INSTANTIATE(double)
#undef ATTN_INSTANTIATE

}  // namespace attn::nn
