#include "models/tied_lm.hpp"

namespace attn::models {

template <class T>
tied_lm<T>::tied_lm(const nn::network_shape& s, std::vector<int64_t> output_rows,
                    std::vector<int64_t> output_cutoffs)
    : trunk(s), pool(s), output(s, std::move(output_rows), std::move(output_cutoffs)), shape_(s) {}

template <class T>
void tied_lm<T>::append_parameters(std::vector<nn::parameter<T>*>& all) {
  trunk.append_parameters(all);
  pool.append_parameters(all);
  output.append_parameters(all);
}

template <class T>
T tied_lm<T>::forward(const nn::batch& b, tied_lm_cache<T>& c, uint64_t dropout_seed) const {
  trunk.forward(b, c, dropout_seed);
  // embed: the token vectors alone, without the output's table gather (classes × embed floats)
  if (b.rows.empty()) {
    c.logits.clear();
    c.row_lse.clear();
    return T(0);
  }
  pool.forward(b, c.y.data(), c, dropout_seed);
  c.output_fused = false;
  return output.forward(b, c.pooled.data(), trunk, c, dropout_seed);
}

template <class T>
void tied_lm<T>::backward(const nn::batch& b, const tied_lm_cache<T>& c) {
  std::vector<int64_t> table_rows, new_rows;  // embedding rows the output gives a gradient
  std::vector<T> dpooled = output.backward(b, c.pooled.data(), trunk, c, table_rows, new_rows);
  std::vector<T> dy(c.y.size(), T(0));
  pool.backward(b, c.y.data(), c, std::move(dpooled), dy.data());
  trunk.backward(b, c, std::move(dy), table_rows, new_rows);
}

template class tied_lm<float>;
template class tied_lm<double>;

}  // namespace attn::models
