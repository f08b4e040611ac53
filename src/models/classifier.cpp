#include "models/classifier.hpp"

namespace attn::models {

template <class T>
classifier<T>::classifier(const nn::network_shape& s) : trunk(s), pool(s), head(s) {}

template <class T>
void classifier<T>::append_parameters(std::vector<nn::parameter<T>*>& all) {
  trunk.append_parameters(all);
  pool.append_parameters(all);
  head.append_parameters(all);
}

template <class T>
T classifier<T>::forward(const nn::batch& b, classifier_cache<T>& c, uint64_t dropout_seed) const {
  trunk.forward(b, c, dropout_seed);
  if (b.rows.empty()) {  // embed: the token vectors alone
    c.logits.clear();
    c.row_lse.clear();
    return T(0);
  }
  pool.forward(b, c.y.data(), c, dropout_seed);
  return head.forward(b, c.pooled.data(), c);
}

template <class T>
void classifier<T>::backward(const nn::batch& b, const classifier_cache<T>& c) {
  std::vector<T> dpooled = head.backward(b, c.pooled.data(), c);
  std::vector<T> dy(c.y.size(), T(0));
  pool.backward(b, c.y.data(), c, std::move(dpooled), dy.data());
  std::vector<int64_t> table_rows, new_rows;  // the head gives no embedding row a gradient
  trunk.backward(b, c, std::move(dy), table_rows, new_rows);
}

template class classifier<float>;
template class classifier<double>;

}  // namespace attn::models
