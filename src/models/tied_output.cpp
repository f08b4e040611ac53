// The tied output's forward and backward, full, fused or adaptive (see tied_output.hpp).
#include "models/tied_output.hpp"

#include <algorithm>
#include <type_traits>

#include "attn/error.hpp"
#include "models/batch_loss.hpp"
#include "nn/cross_entropy.hpp"
#include "nn/embedding.hpp"
#include "nn/fused_output.hpp"
#include "nn/linear_layer.hpp"

namespace attn::models {

template <class T>
tied_output<T>::tied_output(const nn::network_shape& s, std::vector<int64_t> output_rows,
                            std::vector<int64_t> output_cutoffs)
    : shape_(s), output_rows_(std::move(output_rows)), output_cutoffs_(std::move(output_cutoffs)) {
  if (!s.tied_output) return;
  transform_weight = nn::make_parameter<T>("output.transform.weight", {s.hidden, s.pooled()}, true);
  transform_bias = nn::make_parameter<T>("output.transform.bias", {s.hidden}, false);
  bias = nn::make_parameter<T>("output.bias", {s.classes}, false);
  // The cluster tokens are output rows: no decay, as the table's rows
  const int64_t tokens = adaptive() ? static_cast<int64_t>(output_cutoffs_.size()) - 1 : 0;
  cluster_weight = nn::make_parameter<T>("output.clusters.weight", {tokens, s.hidden}, false);
  cluster_bias = nn::make_parameter<T>("output.clusters.bias", {tokens}, false);
}

template <class T>
void tied_output<T>::append_parameters(std::vector<nn::parameter<T>*>& all) {
  for (nn::parameter<T>* p : {&transform_weight, &transform_bias, &bias}) all.push_back(p);
  if (adaptive()) {
    all.push_back(&cluster_weight);
    all.push_back(&cluster_bias);
  }
}

template <class T>
bool tied_output<T>::rows_train(const trunk<T>& table) const {
  if (table.embedding.trainable) return true;
  return std::any_of(output_rows_.begin(), output_rows_.end(),
                     [&](int64_t id) { return id >= shape_.vocabulary; });
}

template <class T>
T tied_output<T>::forward(const nn::batch& b, const T* pooled, const trunk<T>& table,
                          tied_output_cache<T>& c, uint64_t dropout_seed) const {
  const nn::network_shape& s = shape_;
  const auto rows = static_cast<int64_t>(b.rows.size());
  // pooled → hidden [R, Ein] (hidden = pre: no ReLU)
  c.pre.resize(static_cast<size_t>(rows * s.hidden));
  c.hidden.resize(c.pre.size());
  nn::linear_forward(pooled, transform_weight.value.data(), transform_bias.value.data(),
                     c.pre.data(), rows, s.pooled(), s.hidden);
  c.output_fused = false;
  if (!fuses(b, dropout_seed)) c.logits.resize(static_cast<size_t>(rows * s.classes));
  std::copy(c.pre.begin(), c.pre.end(), c.hidden.begin());
  // logits = hidden·table[output_rows]ᵀ + bias
  gather(table, c);
  if (adaptive()) return adaptive_forward(b, c, dropout_seed != 0);
  if (fuses(b, dropout_seed)) return fused_forward(b, table, c);
  nn::linear_forward(c.hidden.data(), c.output_table.data(), bias.value.data(), c.logits.data(),
                     rows, s.hidden, s.classes, bf16_);
  return batch_loss(b, c.logits, s.classes, c.row_lse);
}

template <class T>
std::vector<T> tied_output<T>::backward(const nn::batch& b, const T* pooled, trunk<T>& table,
                                        const tied_output_cache<T>& c,
                                        std::vector<int64_t>& table_rows,
                                        std::vector<int64_t>& new_rows) {
  const nn::network_shape& s = shape_;
  const auto rows = static_cast<int64_t>(b.rows.size());
  const int64_t p = s.pooled();
  std::vector<T> dpre;  // = dhidden (hidden = pre)
  if (adaptive()) {
    dpre = adaptive_backward(b, table, c, table_rows, new_rows);
  } else if (c.output_fused) {  // forward took the gradients already
    for (int64_t j = 0; j < s.classes; ++j)
      bias.grad[static_cast<size_t>(j)] += c.dbias_fused[static_cast<size_t>(j)];
    if (rows_train(table)) rows_backward(table, c.dtable, table_rows, new_rows);
    dpre = c.dhidden_fused;
  } else {
    // loss = cross_entropy(logits, targets) (the bias's gradient summed there)
    std::vector<T>& dlogits = c.dlogits;  // every entry written below
    dlogits.resize(c.logits.size());
    nn::cross_entropy_backward(c.logits.data(), b.targets.data(), dlogits.data(), rows, s.classes,
                               T(1), c.row_lse.size() == static_cast<size_t>(rows) ? c.row_lse.data() : nullptr,
                               bias.grad.data());
    // logits = hidden·Tᵀ + bias with T = table[output_rows]: dT goes back to the rows it came from
    const bool train_rows = rows_train(table);  // frozen rows need no dT (a V×Ein product)
    std::vector<T>& dtable = c.dtable;
    dtable.assign(train_rows ? c.output_table.size() : 0, T(0));
    dpre.assign(c.hidden.size(), T(0));
    nn::linear_backward(dlogits.data(), c.hidden.data(), c.output_table.data(), dpre.data(),
                        train_rows ? dtable.data() : nullptr, static_cast<T*>(nullptr), rows,
                        s.hidden, s.classes, bf16_);
    if (train_rows) rows_backward(table, dtable, table_rows, new_rows);
  }
  // pre = pooled·Wᵀ + b
  std::vector<T> dpooled(static_cast<size_t>(rows * p), T(0));
  nn::linear_backward(dpre.data(), pooled, transform_weight.value.data(), dpooled.data(),
                      transform_weight.grad.data(), transform_bias.grad.data(), rows, p, s.hidden);
  return dpooled;
}

template <class T>
T tied_output<T>::adaptive_forward(const nn::batch& b, tied_output_cache<T>& c, bool training) const {
  const nn::network_shape& s = shape_;
  const auto rows = static_cast<int64_t>(b.rows.size());
  const nn::adaptive_cuts cuts = this->cuts();
  const bool targets = b.targets.size() == b.rows.size();
  // (training leaves logits as they were: resizing them back for each held-out pass would zero
  // R × C floats, 268 MB at a 16k vocabulary, every time)
  c.row_lse.clear();
  if (!training) {  // every class's log-probability: predict, eval, the held-out scores
    c.logits.resize(static_cast<size_t>(rows * s.classes));
    c.token_scores.resize(static_cast<size_t>(rows * cuts.clusters()));
    nn::linear_forward(c.hidden.data(), c.output_table.data(), bias.value.data(), c.logits.data(),
                       rows, s.hidden, s.classes);
    nn::linear_forward(c.hidden.data(), cluster_weight.value.data(), cluster_bias.value.data(),
                       c.token_scores.data(), rows, s.hidden, cuts.clusters());
    nn::adaptive_log_probabilities(c.logits.data(), c.token_scores.data(), rows, cuts);
  }
  if (!targets) {
    c.adaptive.head_targets.clear();
    return T(0);
  }
  return nn::adaptive_output_forward(c.hidden.data(), c.output_table.data(), bias.value.data(),
                                     cluster_weight.value.data(), cluster_bias.value.data(),
                                     b.targets.data(), rows, s.hidden, cuts, c.adaptive, bf16_);
}

template <class T>
std::vector<T> tied_output<T>::adaptive_backward(const nn::batch& b, trunk<T>& table,
                                                 const tied_output_cache<T>& c,
                                                 std::vector<int64_t>& table_rows,
                                                 std::vector<int64_t>& new_rows) {
  const nn::network_shape& s = shape_;
  const auto rows = static_cast<int64_t>(b.rows.size());
  std::vector<T> dhidden(c.hidden.size(), T(0));
  if (c.adaptive.head_targets.size() != static_cast<size_t>(rows)) return dhidden;  // no loss
  // As the full softmax's: dT goes back to the embedding rows it came from
  const bool train_rows = rows_train(table);
  std::vector<T>& dtable = c.dtable;
  if (train_rows && !table.embedding.trainable) {
    // A frozen table: only the learned words' classes need their row's gradient, [M, Ein]
    std::vector<int64_t> learned;
    for (int64_t k = 0; k < s.classes; ++k)
      if (output_rows_[static_cast<size_t>(k)] >= s.vocabulary) learned.push_back(k);
    dtable.assign(learned.size() * static_cast<size_t>(s.embed), T(0));
    nn::adaptive_output_backward(c.hidden.data(), c.output_table.data(), c.adaptive, rows, s.hidden,
                                 cuts(), dhidden.data(), dtable.data(), bias.grad.data(),
                                 cluster_weight.grad.data(), cluster_bias.grad.data(), bf16_,
                                 &learned);
    for (size_t m = 0; m < learned.size(); ++m) {
      const int64_t row = output_rows_[static_cast<size_t>(learned[m])] - s.vocabulary;
      T* to = table.new_words.grad.data() + row * s.embed;
      const T* from = dtable.data() + static_cast<int64_t>(m) * s.embed;
      for (int64_t j = 0; j < s.embed; ++j) to[j] += from[j];
      new_rows.push_back(row);
    }
    return dhidden;
  }
  dtable.assign(train_rows ? c.output_table.size() : 0, T(0));
  nn::adaptive_output_backward(c.hidden.data(), c.output_table.data(), c.adaptive, rows, s.hidden,
                               cuts(), dhidden.data(), train_rows ? dtable.data() : nullptr,
                               bias.grad.data(), cluster_weight.grad.data(),
                               cluster_bias.grad.data(), bf16_);
  if (train_rows) rows_backward(table, dtable, table_rows, new_rows);
  return dhidden;
}

template <class T>
bool tied_output<T>::fuses(const nn::batch& b, uint64_t dropout_seed) const {
  // Training (a seed given), float32 products, the full softmax, targets to score.
  return std::is_same_v<T, float> && dropout_seed != 0 && shape_.tied_output && !adaptive() &&
         !bf16_ && !b.rows.empty() && b.targets.size() == b.rows.size() &&
         nn::fused_output_pays(shape_.classes, shape_.hidden);
}

template <class T>
T tied_output<T>::fused_forward(const nn::batch& b, const trunk<T>& table,
                                tied_output_cache<T>& c) const {
  if constexpr (std::is_same_v<T, float>) {
    const nn::network_shape& s = shape_;
    const auto rows = static_cast<int64_t>(b.rows.size());
    const bool train_rows = rows_train(table);
    c.logits.clear();
    c.row_lse.clear();
    c.dtable.resize(train_rows ? c.output_table.size() : 0);
    c.dhidden_fused.resize(c.hidden.size());
    c.dbias_fused.assign(static_cast<size_t>(s.classes), 0.0f);
    c.output_fused = true;
    return nn::fused_output_loss_and_gradients(c.hidden.data(), c.output_table.data(),
                                               bias.value.data(), b.targets.data(), rows, s.hidden,
                                               s.classes, c.dhidden_fused.data(),
                                               train_rows ? c.dtable.data() : nullptr,
                                               c.dbias_fused.data(), c.fused_scratch);
  } else {
    (void)b, (void)table, (void)c;
    return T(0);  // never: fuses() is false for double
  }
}

template <class T>
void tied_output<T>::gather(const trunk<T>& table, tied_output_cache<T>& c) const {
  const nn::network_shape& s = shape_;
  const auto size = static_cast<size_t>(s.classes * s.embed);
  const T* frozen = table.embedding.trainable ? nullptr : table.embedding.value.data();
  if (frozen == nullptr || c.output_table_frozen_from != frozen || c.output_table.size() != size) {
    c.output_table.resize(size);
    nn::embedding_forward(output_rows_.data(), table.embedding.value.data(), s.vocabulary,
                          table.new_words.value.data(), c.output_table.data(), s.classes, s.embed);
    c.output_table_frozen_from = frozen;
    return;
  }
  // The frozen rows are as the last forward gathered them; the learned words' rows move.
  for (int64_t i = 0; i < s.classes; ++i) {
    const int64_t id = output_rows_[static_cast<size_t>(i)];
    if (id < s.vocabulary) continue;
    const T* row = table.new_words.value.data() + (id - s.vocabulary) * s.embed;
    std::copy(row, row + s.embed, c.output_table.begin() + i * s.embed);
  }
}

template <class T>
void tied_output<T>::rows_backward(trunk<T>& table, const std::vector<T>& dtable,
                                   std::vector<int64_t>& table_rows,
                                   std::vector<int64_t>& new_rows) const {
  const nn::network_shape& s = shape_;
  nn::embedding_backward(output_rows_.data(), dtable.data(),
                         table.embedding.trainable ? table.embedding.grad.data() : nullptr,
                         s.vocabulary, s.new_words > 0 ? table.new_words.grad.data() : nullptr,
                         s.classes, s.embed);
  for (int64_t id : output_rows_) {
    if (id >= s.vocabulary) new_rows.push_back(id - s.vocabulary);
    else if (table.embedding.trainable) table_rows.push_back(id);
  }
}

template <class T>
std::vector<T> tied_output<T>::table(const trunk<T>& t) const {
  const nn::network_shape& s = shape_;
  std::vector<T> rows(static_cast<size_t>(s.classes * s.embed));
  nn::embedding_forward(output_rows_.data(), t.embedding.value.data(), s.vocabulary,
                        t.new_words.value.data(), rows.data(), s.classes, s.embed);
  return rows;
}

template <class T>
std::vector<T> tied_output<T>::transform(const T* y, int64_t rows) const {
  std::vector<T> pre(static_cast<size_t>(rows * shape_.hidden));
  nn::linear_forward(y, transform_weight.value.data(), transform_bias.value.data(), pre.data(), rows,
                     shape_.pooled(), shape_.hidden);
  return pre;
}

template <class T>
std::vector<T> tied_output<T>::scores(const T* y, int64_t rows, const std::vector<T>& table) const {
  const nn::network_shape& s = shape_;
  const std::vector<T> pre = transform(y, rows);
  std::vector<T> logits(static_cast<size_t>(rows * s.classes));
  nn::linear_forward(pre.data(), table.data(), bias.value.data(), logits.data(), rows, s.hidden,
                     s.classes);
  if (adaptive()) {
    const nn::adaptive_cuts cuts = this->cuts();
    std::vector<T> tokens(static_cast<size_t>(rows * cuts.clusters()));
    nn::linear_forward(pre.data(), cluster_weight.value.data(), cluster_bias.value.data(),
                       tokens.data(), rows, s.hidden, cuts.clusters());
    nn::adaptive_log_probabilities(logits.data(), tokens.data(), rows, cuts);
  }
  return logits;
}

template <class T>
void tied_output<T>::row_scores(const float* y, const std::vector<float>& table,
                                std::vector<float>& hidden, std::vector<float>& scores,
                                std::vector<float>& clusters) const {
  if constexpr (std::is_same_v<T, float>) {
    const nn::network_shape& s = shape_;
    hidden.resize(static_cast<size_t>(s.hidden));
    scores.resize(static_cast<size_t>(s.classes));
    nn::linear_row_forward(y, transform_weight.value.data(), transform_bias.value.data(),
                           hidden.data(), s.pooled(), s.hidden);
    nn::linear_row_forward(hidden.data(), table.data(), bias.value.data(), scores.data(), s.hidden,
                           s.classes);
    if (!adaptive()) return;
    // scores → each class's log-probability, a softmax of the same distribution
    const nn::adaptive_cuts cuts = this->cuts();
    clusters.resize(static_cast<size_t>(cuts.clusters()));
    nn::linear_row_forward(hidden.data(), cluster_weight.value.data(), cluster_bias.value.data(),
                           clusters.data(), s.hidden, cuts.clusters());
    nn::adaptive_log_probabilities(scores.data(), clusters.data(), int64_t{1}, cuts);
  } else {
    (void)y, (void)table, (void)hidden, (void)scores, (void)clusters;
    throw_usage("the one-row path runs in float");
  }
}

template class tied_output<float>;
template class tied_output<double>;

}  // namespace attn::models
