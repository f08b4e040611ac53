#include "models/pooling.hpp"

#include <algorithm>

#include "nn/attention_pool.hpp"
#include "nn/dropout.hpp"
#include "nn/max_pool.hpp"
#include "nn/mean_pool.hpp"
#include "nn/token_pool.hpp"

namespace attn::models {

using nn::pool_kind;

template <class T>
pooling<T>::pooling(const nn::network_shape& s) : shape_(s) {
  query = nn::make_parameter<T>("pool.query", {s.pool == pool_kind::attention ? s.width : 0}, false);
}

template <class T>
void pooling<T>::append_parameters(std::vector<nn::parameter<T>*>& all) {
  if (shape_.pool == pool_kind::attention) all.push_back(&query);
}

template <class T>
void pooling<T>::forward(const nn::batch& b, const T* y, pooling_cache<T>& c,
                         uint64_t dropout_seed) const {
  const nn::network_shape& s = shape_;
  const auto rows = static_cast<int64_t>(b.rows.size());
  const bool dropout = dropout_seed != 0 && s.dropout > 0;
  const int64_t p = s.pooled();
  c.pooled.resize(static_cast<size_t>(rows * p));
  std::vector<T> part(s.pool == pool_kind::mean_max ? static_cast<size_t>(rows * s.width) : 0);
  if (s.pool == pool_kind::attention) {
    c.pool_weights.resize(static_cast<size_t>(rows * b.length));
    nn::attention_pool_forward(y, query.value.data(), b.rows.data(), c.pooled.data(),
                               c.pool_weights.data(), rows, b.length, s.width);
  }
  if (s.pool == pool_kind::token)
    nn::token_pool_forward(y, b.rows.data(), c.pooled.data(), rows, b.length, s.width);
  if (s.pool == pool_kind::mean || s.pool == pool_kind::mean_max) {
    T* mean = s.pool == pool_kind::mean ? c.pooled.data() : part.data();
    nn::mean_pool_forward(y, b.rows.data(), mean, rows, b.length, s.width);
  }
  if (s.pool == pool_kind::max || s.pool == pool_kind::mean_max) {
    c.argmax.resize(static_cast<size_t>(rows * s.width));
    std::vector<T> max(s.pool == pool_kind::max ? 0 : part.size());
    nn::max_pool_forward(y, b.rows.data(), s.pool == pool_kind::max ? c.pooled.data() : max.data(),
                         c.argmax.data(), rows, b.length, s.width);
    for (int64_t r = 0; r < rows && s.pool == pool_kind::mean_max; ++r) {  // [mean | max]
      std::copy_n(part.data() + r * s.width, s.width, c.pooled.data() + r * p);
      std::copy_n(max.data() + r * s.width, s.width, c.pooled.data() + r * p + s.width);
    }
  }
  c.drop_pooled.resize(dropout ? c.pooled.size() : 0);
  if (dropout) {  // (~seed: a mask apart from the embeddings')
    nn::dropout_mask(~dropout_seed, s.dropout, c.drop_pooled.data(), rows * p);
    nn::dropout_apply(c.drop_pooled.data(), c.pooled.data(), rows * p);
  }
}

template <class T>
void pooling<T>::backward(const nn::batch& b, const T* y, const pooling_cache<T>& c,
                          std::vector<T> dpooled, T* dy) {
  const nn::network_shape& s = shape_;
  const auto rows = static_cast<int64_t>(b.rows.size());
  const int64_t p = s.pooled();
  if (!c.drop_pooled.empty()) nn::dropout_apply(c.drop_pooled.data(), dpooled.data(), rows * p);
  if (s.pool == pool_kind::token) {
    nn::token_pool_backward(dpooled.data(), b.rows.data(), dy, rows, b.length, s.width);
  } else if (s.pool == pool_kind::mean) {
    nn::mean_pool_backward(dpooled.data(), b.rows.data(), dy, rows, b.length, s.width);
  } else if (s.pool == pool_kind::attention) {
    nn::attention_pool_backward(dpooled.data(), y, query.value.data(), b.rows.data(),
                                c.pool_weights.data(), dy, query.grad.data(), rows, b.length,
                                s.width);
  } else if (s.pool == pool_kind::max) {
    nn::max_pool_backward(dpooled.data(), b.rows.data(), c.argmax.data(), dy, rows, b.length,
                          s.width);
  } else {  // pooled = [mean | max]
    std::vector<T> dmean(static_cast<size_t>(rows * s.width)), dmax(dmean.size());
    for (int64_t r = 0; r < rows; ++r) {
      std::copy_n(dpooled.data() + r * p, s.width, dmean.data() + r * s.width);
      std::copy_n(dpooled.data() + r * p + s.width, s.width, dmax.data() + r * s.width);
    }
    nn::mean_pool_backward(dmean.data(), b.rows.data(), dy, rows, b.length, s.width);
    nn::max_pool_backward(dmax.data(), b.rows.data(), c.argmax.data(), dy, rows, b.length,
                          s.width);
  }
}

template class pooling<float>;
template class pooling<double>;

}  // namespace attn::models
