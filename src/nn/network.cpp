// The text model's forward and backward passes, layer by layer (see network.hpp).
#include "nn/network.hpp"

#include <algorithm>

#include "nn/cross_entropy.hpp"
#include "nn/embedding.hpp"
#include "nn/linear_layer.hpp"

namespace attn::nn {

int64_t batch::tokens() const {
  int64_t n = 0;
  for (int64_t l : lengths) n += l;
  return n;
}

namespace {

template <class T>
parameter<T> make(std::string name, shape_t shape, bool decay) {
  parameter<T> p;
  p.name = std::move(name);
  p.value.assign(static_cast<size_t>(shape_numel(shape)), T(0));
  p.grad.assign(p.value.size(), T(0));
  p.shape = std::move(shape);
  p.decay = decay;
  return p;
}

}  // namespace

template <class T>
network<T>::network(const network_shape& s) : shape_(s) {
  const int64_t e = s.width, in = s.embed;
  embedding = make<T>("embedding.weight", {s.vocabulary, in}, false);
  embedding.trainable = s.train_embeddings;
  if (!embedding.trainable) embedding.grad.clear();  // frozen: 50,000 GloVe rows need no gradient
  position = make<T>("position.weight", {s.positions, in}, false);
  wq = make<T>("attention.q_proj_weight", {e, in}, true);
  wk = make<T>("attention.k_proj_weight", {e, in}, true);
  wv = make<T>("attention.v_proj_weight", {e, in}, true);
  bq = make<T>("attention.q_proj_bias", {e}, false);
  bk = make<T>("attention.k_proj_bias", {e}, false);
  bv = make<T>("attention.v_proj_bias", {e}, false);
  wo = make<T>("attention.out_proj.weight", {e, e}, true);
  bo = make<T>("attention.out_proj.bias", {e}, false);
  w1 = make<T>("head.0.weight", {s.hidden, e}, true);
  b1 = make<T>("head.0.bias", {s.hidden}, false);
  w2 = make<T>("head.2.weight", {s.classes, s.hidden}, true);
  b2 = make<T>("head.2.bias", {s.classes}, false);
}

template <class T>
std::vector<parameter<T>*> network<T>::parameters() {
  std::vector<parameter<T>*> all{&embedding};
  if (shape_.positions > 0) all.push_back(&position);
  for (parameter<T>* p : {&wq, &bq, &wk, &bk, &wv, &bv, &wo, &bo, &w1, &b1, &w2, &b2})
    all.push_back(p);
  return all;
}

template <class T>
std::vector<const parameter<T>*> network<T>::parameters() const {
  std::vector<const parameter<T>*> all;
  for (parameter<T>* p : const_cast<network*>(this)->parameters()) all.push_back(p);
  return all;
}

template <class T>
void network<T>::zero_grad() {
  for (parameter<T>* p : parameters())
    if (p->trainable) std::fill(p->grad.begin(), p->grad.end(), T(0));
}

template <class T>
self_attention_shape network<T>::attention_shape(const batch& b) const {
  return {b.size, b.length, shape_.embed, shape_.width, shape_.heads};
}

template <class T>
attention_mask_spec network<T>::mask(const batch& b) const {
  // Causal attention never looks past a sequence's end, so only the classifier needs the
  // padding mask.
  attention_mask_spec m;
  m.causal = shape_.causal;
  if (!shape_.causal) m.lengths = b.lengths;
  return m;
}

template <class T>
self_attention_weights<T> network<T>::attention_weights() const {
  return {wq.value.data(), bq.value.data(), wk.value.data(), bk.value.data(),
          wv.value.data(), bv.value.data(), wo.value.data(), bo.value.data()};
}

template <class T>
T network<T>::forward(const batch& b, network_cache<T>& c) const {
  const network_shape& s = shape_;
  const int64_t tokens = b.size * b.length, rows = static_cast<int64_t>(b.rows.size());
  // ids [B, L] → x [B, L, Ein] (+ positions)
  c.x.resize(static_cast<size_t>(tokens * s.embed));
  embedding_forward(b.ids.data(), embedding.value.data(), c.x.data(), tokens, s.embed);
  if (s.positions > 0)
    positional_forward(position.value.data(), c.x.data(), b.size, b.length, s.embed);
  // x → y [B, L, E]
  c.y.resize(static_cast<size_t>(tokens * s.width));
  self_attention_forward(c.x.data(), attention_weights(), c.y.data(), c.attention,
                         attention_shape(b), mask(b));
  // y → pooled [R, E]
  c.pooled.resize(static_cast<size_t>(rows * s.width));
  mean_pool_forward(c.y.data(), b.rows.data(), c.pooled.data(), rows, b.length, s.width);
  // pooled → pre → hidden [R, hidden] → logits [R, C]
  c.pre.resize(static_cast<size_t>(rows * s.hidden));
  c.hidden.resize(c.pre.size());
  linear_forward(c.pooled.data(), w1.value.data(), b1.value.data(), c.pre.data(), rows, s.width,
                 s.hidden);
  relu_forward(c.pre.data(), c.hidden.data(), rows * s.hidden);
  c.logits.resize(static_cast<size_t>(rows * s.classes));
  linear_forward(c.hidden.data(), w2.value.data(), b2.value.data(), c.logits.data(), rows,
                 s.hidden, s.classes);
  if (b.targets.size() != b.rows.size()) return T(0);
  return cross_entropy_forward(c.logits.data(), b.targets.data(), static_cast<T*>(nullptr), rows,
                               s.classes);
}

template <class T>
void network<T>::backward(const batch& b, const network_cache<T>& c) {
  const network_shape& s = shape_;
  const int64_t tokens = b.size * b.length, rows = static_cast<int64_t>(b.rows.size());
  // loss = cross_entropy(logits, targets)
  std::vector<T> dlogits(c.logits.size());
  cross_entropy_backward(c.logits.data(), b.targets.data(), dlogits.data(), rows, s.classes);
  // logits = hidden·W2ᵀ + b2
  std::vector<T> dhidden(c.hidden.size(), T(0));
  linear_backward(dlogits.data(), c.hidden.data(), w2.value.data(), dhidden.data(),
                  w2.grad.data(), b2.grad.data(), rows, s.hidden, s.classes);
  // hidden = relu(pre)
  std::vector<T> dpre(c.pre.size(), T(0));
  relu_backward(dhidden.data(), c.pre.data(), dpre.data(), rows * s.hidden);
  // pre = pooled·W1ᵀ + b1
  std::vector<T> dpooled(c.pooled.size(), T(0));
  linear_backward(dpre.data(), c.pooled.data(), w1.value.data(), dpooled.data(), w1.grad.data(),
                  b1.grad.data(), rows, s.width, s.hidden);
  // pooled = mean of y over each row's tokens
  std::vector<T> dy(c.y.size(), T(0));
  mean_pool_backward(dpooled.data(), b.rows.data(), dy.data(), rows, b.length, s.width);
  // y = self_attention(x); frozen embeddings without positions need no dx
  const bool need_dx = embedding.trainable || s.positions > 0;
  std::vector<T> dx(need_dx ? static_cast<size_t>(tokens * s.embed) : 0, T(0));
  const self_attention_grads<T> g{wq.grad.data(), bq.grad.data(), wk.grad.data(), bk.grad.data(),
                                  wv.grad.data(), bv.grad.data(), wo.grad.data(), bo.grad.data()};
  self_attention_backward(dy.data(), c.x.data(), attention_weights(), c.attention,
                          need_dx ? dx.data() : nullptr, g, attention_shape(b), mask(b));
  if (!need_dx) return;
  // x = embedding[ids] + position[t]
  if (s.positions > 0)
    positional_backward(dx.data(), position.grad.data(), b.size, b.length, s.embed);
  if (embedding.trainable)
    embedding_backward(b.ids.data(), dx.data(), embedding.grad.data(), tokens, s.embed);
}

template class network<float>;
template class network<double>;

}  // namespace attn::nn
