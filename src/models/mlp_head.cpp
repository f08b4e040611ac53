#include "models/mlp_head.hpp"

#include "models/batch_loss.hpp"
#include "nn/cross_entropy.hpp"
#include "nn/linear_layer.hpp"

namespace attn::models {

template <class T>
mlp_head<T>::mlp_head(const nn::network_shape& s) : shape_(s) {
  if (s.tied_output) return;
  w1 = nn::make_parameter<T>("head.0.weight", {s.hidden, s.pooled()}, true);
  b1 = nn::make_parameter<T>("head.0.bias", {s.hidden}, false);
  w2 = nn::make_parameter<T>("head.2.weight", {s.classes, s.hidden}, true);
  b2 = nn::make_parameter<T>("head.2.bias", {s.classes}, false);
}

template <class T>
void mlp_head<T>::append_parameters(std::vector<nn::parameter<T>*>& all) {
  for (nn::parameter<T>* p : {&w1, &b1, &w2, &b2}) all.push_back(p);
}

template <class T>
T mlp_head<T>::forward(const nn::batch& b, const T* pooled, head_cache<T>& c) const {
  const nn::network_shape& s = shape_;
  const auto rows = static_cast<int64_t>(b.rows.size());
  // pooled → pre → hidden [R, hidden] → logits [R, C]
  c.pre.resize(static_cast<size_t>(rows * s.hidden));
  c.hidden.resize(c.pre.size());
  nn::linear_forward(pooled, w1.value.data(), b1.value.data(), c.pre.data(), rows, s.pooled(),
                     s.hidden);
  c.logits.resize(static_cast<size_t>(rows * s.classes));
  nn::relu_forward(c.pre.data(), c.hidden.data(), rows * s.hidden);
  nn::linear_forward(c.hidden.data(), w2.value.data(), b2.value.data(), c.logits.data(), rows,
                     s.hidden, s.classes);
  return batch_loss(b, c.logits, s.classes, c.row_lse);
}

template <class T>
std::vector<T> mlp_head<T>::backward(const nn::batch& b, const T* pooled, const head_cache<T>& c) {
  const nn::network_shape& s = shape_;
  const auto rows = static_cast<int64_t>(b.rows.size());
  const int64_t p = s.pooled();
  // loss = cross_entropy(logits, targets) (b2's gradient, Σ dlogits over rows, is summed there,
  // while each row is in cache)
  std::vector<T>& dlogits = c.dlogits;  // every entry written below
  dlogits.resize(c.logits.size());
  nn::cross_entropy_backward(c.logits.data(), b.targets.data(), dlogits.data(), rows, s.classes,
                             T(1), c.row_lse.size() == static_cast<size_t>(rows) ? c.row_lse.data() : nullptr,
                             b2.grad.data());
  // logits = hidden·W2ᵀ + b2
  std::vector<T> dhidden(c.hidden.size(), T(0)), dpre(c.pre.size(), T(0));
  nn::linear_backward(dlogits.data(), c.hidden.data(), w2.value.data(), dhidden.data(),
                      w2.grad.data(), static_cast<T*>(nullptr), rows, s.hidden, s.classes);
  // hidden = relu(pre)
  nn::relu_backward(dhidden.data(), c.pre.data(), dpre.data(), rows * s.hidden);
  // pre = pooled·W1ᵀ + b1
  std::vector<T> dpooled(static_cast<size_t>(rows * p), T(0));
  nn::linear_backward(dpre.data(), pooled, w1.value.data(), dpooled.data(), w1.grad.data(),
                      b1.grad.data(), rows, p, s.hidden);
  return dpooled;
}

template class mlp_head<float>;
template class mlp_head<double>;

}  // namespace attn::models
