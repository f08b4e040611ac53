// The text model's model chosen by its shape, and the calls passed on to it (see network.hpp).
#include "models/network.hpp"

#include <type_traits>

namespace attn::models {

namespace {

template <class T>
std::variant<models::classifier<T>, models::masked_lm<T>, models::causal_lm<T>> model_for(
    const nn::network_shape& s, std::vector<int64_t> rows, std::vector<int64_t> cutoffs) {
  if (!s.tied_output) return models::classifier<T>(s);
  if (s.causal) return models::causal_lm<T>(s, std::move(rows), std::move(cutoffs));
  return models::masked_lm<T>(s, std::move(rows), std::move(cutoffs));
}

}  // namespace

template <class T>
network<T>::network(const nn::network_shape& s, std::vector<int64_t> output_rows,
                    std::vector<int64_t> output_cutoffs)
    : shape_(s), model_(model_for<T>(s, std::move(output_rows), std::move(output_cutoffs))) {}

template <class T>
models::tied_lm<T>& network<T>::words() {
  if (auto* m = std::get_if<models::causal_lm<T>>(&model_)) return *m;
  return std::get<models::masked_lm<T>>(model_);
}

template <class T>
const models::tied_lm<T>& network<T>::words() const {
  return const_cast<network*>(this)->words();
}

template <class T>
void network<T>::set_output_bf16(bool on) {
  if (shape_.tied_output) output().set_bf16(on);
}

template <class T>
std::vector<nn::parameter<T>*> network<T>::parameters() {
  std::vector<nn::parameter<T>*> all;
  std::visit([&](auto& m) { m.append_parameters(all); }, model_);
  return all;
}

template <class T>
std::vector<const nn::parameter<T>*> network<T>::parameters() const {
  std::vector<const nn::parameter<T>*> all;
  for (nn::parameter<T>* p : const_cast<network*>(this)->parameters()) all.push_back(p);
  return all;
}

template <class T>
void network<T>::zero_grad() {
  for (nn::parameter<T>* p : parameters())
    if (p->trainable) p->clear_grad();
}

template <class T>
T network<T>::forward(const nn::batch& b, network_cache<T>& c, uint64_t dropout_seed) const {
  return std::visit(
      [&](const auto& m) -> T {
        if constexpr (std::is_same_v<std::decay_t<decltype(m)>, models::classifier<T>>)
          return m.forward(b, c.classifier(), dropout_seed);
        else
          return m.forward(b, c.words(), dropout_seed);
      },
      model_);
}

template <class T>
void network<T>::backward(const nn::batch& b, const network_cache<T>& c) {
  std::visit(
      [&](auto& m) {
        if constexpr (std::is_same_v<std::decay_t<decltype(m)>, models::classifier<T>>)
          m.backward(b, c.classifier());
        else
          m.backward(b, c.words());
      },
      model_);
}

template class network<float>;
template class network<double>;

}  // namespace attn::models
