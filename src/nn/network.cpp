// The text model's forward and backward: its pieces one after the other (see network.hpp).
#include "nn/network.hpp"

namespace attn::nn {

template <class T>
network<T>::network(const network_shape& s, std::vector<int64_t> output_rows,
                    std::vector<int64_t> output_cutoffs)
    : trunk(s), pool(s), head(s), output(s, std::move(output_rows), std::move(output_cutoffs)),
      shape_(s) {}

template <class T>
std::vector<parameter<T>*> network<T>::parameters() {
  std::vector<parameter<T>*> all;
  trunk.append_parameters(all);
  pool.append_parameters(all);
  if (shape_.tied_output) output.append_parameters(all);
  else head.append_parameters(all);
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
    if (p->trainable) p->clear_grad();
}

template <class T>
T network<T>::forward(const batch& b, network_cache<T>& c, uint64_t dropout_seed) const {
  trunk.forward(b, c, dropout_seed);
  // A batch with no rows asks for the token vectors y alone (embed): no pooling and no output
  // head, whose tied table gather alone is classes × embed floats a forward.
  if (b.rows.empty()) {
    c.logits.clear();
    c.row_lse.clear();
    return T(0);
  }
  pool.forward(b, c.y.data(), c, dropout_seed);
  c.output_fused = false;
  if (shape_.tied_output) return output.forward(b, c.pooled.data(), trunk, c, dropout_seed);
  return head.forward(b, c.pooled.data(), c);
}

template <class T>
void network<T>::backward(const batch& b, const network_cache<T>& c) {
  std::vector<int64_t> table_rows, new_rows;  // embedding rows given a gradient
  std::vector<T> dpooled = shape_.tied_output
                               ? output.backward(b, c.pooled.data(), trunk, c, table_rows, new_rows)
                               : head.backward(b, c.pooled.data(), c);
  std::vector<T> dy(c.y.size(), T(0));
  pool.backward(b, c.y.data(), c, std::move(dpooled), dy.data());
  trunk.backward(b, c, std::move(dy), table_rows, new_rows);
}

template class network<float>;
template class network<double>;

}  // namespace attn::nn
