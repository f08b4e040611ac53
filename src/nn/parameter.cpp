#include "nn/parameter.hpp"

#include <algorithm>

namespace attn::nn {

template <class T>
void parameter<T>::touch(const std::vector<int64_t>& rows) {
  touched.insert(touched.end(), rows.begin(), rows.end());
  std::sort(touched.begin(), touched.end());
  touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
}

template <class T>
void parameter<T>::clear_grad() {
  if (!sparse()) {
    std::fill(grad.begin(), grad.end(), T(0));
    return;
  }
  for (int64_t r : touched)
    std::fill_n(grad.begin() + r * row_width, row_width, T(0));
  touched.clear();
}

template <class T>
parameter<T> make_parameter(std::string name, shape_t shape, bool decay) {
  parameter<T> p;
  p.name = std::move(name);
  p.value.assign(static_cast<size_t>(shape_numel(shape)), T(0));
  p.grad.assign(p.value.size(), T(0));
  p.shape = std::move(shape);
  p.decay = decay;
  return p;
}

template <class T>
attention_parameters<T> make_attention_parameters(const std::string& prefix, int64_t e, int64_t in) {
  attention_parameters<T> a;
  a.wq = make_parameter<T>(prefix + "q_proj_weight", {e, in}, true);
  a.wk = make_parameter<T>(prefix + "k_proj_weight", {e, in}, true);
  a.wv = make_parameter<T>(prefix + "v_proj_weight", {e, in}, true);
  a.bq = make_parameter<T>(prefix + "q_proj_bias", {e}, false);
  a.bk = make_parameter<T>(prefix + "k_proj_bias", {e}, false);
  a.bv = make_parameter<T>(prefix + "v_proj_bias", {e}, false);
  a.wo = make_parameter<T>(prefix + "out_proj.weight", {e, e}, true);
  a.bo = make_parameter<T>(prefix + "out_proj.bias", {e}, false);
  return a;
}

template <class T>
self_attention_weights<T> attention_parameters<T>::weights() const {
  return {wq.value.data(), bq.value.data(), wk.value.data(), bk.value.data(),
          wv.value.data(), bv.value.data(), wo.value.data(), bo.value.data()};
}

template <class T>
self_attention_grads<T> attention_parameters<T>::grads() {
  return {wq.grad.data(), bq.grad.data(), wk.grad.data(), bk.grad.data(),
          wv.grad.data(), bv.grad.data(), wo.grad.data(), bo.grad.data()};
}

template <class T>
void attention_parameters<T>::append_to(std::vector<parameter<T>*>& all) {
  for (parameter<T>* p : {&wq, &bq, &wk, &bk, &wv, &bv, &wo, &bo}) all.push_back(p);
}

template <class T>
encoder_parameters<T> make_encoder_parameters(int64_t index, int64_t e, int64_t f) {
  const std::string prefix = "layers." + std::to_string(index) + ".";
  encoder_parameters<T> l;
  l.attention = make_attention_parameters<T>(prefix + "attention.", e, e);
  l.norm1_weight = make_parameter<T>(prefix + "norm1.weight", {e}, false);
  l.norm1_bias = make_parameter<T>(prefix + "norm1.bias", {e}, false);
  l.linear1_weight = make_parameter<T>(prefix + "linear1.weight", {f, e}, true);
  l.linear1_bias = make_parameter<T>(prefix + "linear1.bias", {f}, false);
  l.linear2_weight = make_parameter<T>(prefix + "linear2.weight", {e, f}, true);
  l.linear2_bias = make_parameter<T>(prefix + "linear2.bias", {e}, false);
  l.norm2_weight = make_parameter<T>(prefix + "norm2.weight", {e}, false);
  l.norm2_bias = make_parameter<T>(prefix + "norm2.bias", {e}, false);
  return l;
}

template <class T>
encoder_block_weights<T> encoder_parameters<T>::weights() const {
  return {attention.weights(),        norm1_weight.value.data(),   norm1_bias.value.data(),
          linear1_weight.value.data(), linear1_bias.value.data(), linear2_weight.value.data(),
          linear2_bias.value.data(),  norm2_weight.value.data(),   norm2_bias.value.data()};
}

template <class T>
encoder_block_grads<T> encoder_parameters<T>::grads() {
  return {attention.grads(),         norm1_weight.grad.data(),   norm1_bias.grad.data(),
          linear1_weight.grad.data(), linear1_bias.grad.data(), linear2_weight.grad.data(),
          linear2_bias.grad.data(),  norm2_weight.grad.data(),   norm2_bias.grad.data()};
}

template <class T>
void encoder_parameters<T>::append_to(std::vector<parameter<T>*>& all) {
  attention.append_to(all);
  for (parameter<T>* p : {&norm1_weight, &norm1_bias, &linear1_weight, &linear1_bias,
                          &linear2_weight, &linear2_bias, &norm2_weight, &norm2_bias})
    all.push_back(p);
}

#define ATTN_PARAMETER(T)                                                                        \
  template struct parameter<T>;                                                                  \
  template struct attention_parameters<T>;                                                       \
  template struct encoder_parameters<T>;                                                         \
  template parameter<T> make_parameter<T>(std::string, shape_t, bool);                           \
  template attention_parameters<T> make_attention_parameters<T>(const std::string&, int64_t,     \
                                                                int64_t);                        \
  template encoder_parameters<T> make_encoder_parameters<T>(int64_t, int64_t, int64_t);
ATTN_PARAMETER(float)
ATTN_PARAMETER(double)
#undef ATTN_PARAMETER

}  // namespace attn::nn
