// The trainable text model as the callers that work on any model see it: one of the three models
// of src/models/ (classifier.hpp: classify, next-word; masked_lm.hpp: masked-word; causal_lm.hpp:
// lm), chosen by the shape, behind forward/backward/parameters/zero_grad.
//
// Why a variant and not a base class with virtual forward/backward: the trainers copy models by
// value (one copy per shard, sharded_step.hpp) and keep a cache beside each, and the models are
// three and known; a variant copies as a value, needs no allocation or clone(), and each model's
// forward takes its own cache type. network_cache is the matching variant of the models' caches.
// Templated on the scalar: float trains, double is the specification for gradient checks.
#pragma once

#include <cstdint>
#include <variant>
#include <vector>

#include "models/causal_lm.hpp"
#include "models/classifier.hpp"
#include "models/head_cache.hpp"
#include "models/masked_lm.hpp"
#include "models/pooling.hpp"
#include "models/trunk.hpp"
#include "nn/batch.hpp"
#include "nn/network_shape.hpp"
#include "nn/parameter.hpp"

namespace attn::models {

// A forward's results (y, logits, …), in the cache type of the model that filled it; a forward
// with another model's cache starts it afresh. The parts every model has are read through
// trunk(), pooling() and head(); the word models' own through words().
template <class T>
class network_cache {
 public:
  models::trunk_cache<T>& trunk() { return std::visit(as_base<models::trunk_cache<T>>, state_); }
  const models::trunk_cache<T>& trunk() const {
    return std::visit(as_const_base<models::trunk_cache<T>>, state_);
  }
  models::pooling_cache<T>& pooling() { return std::visit(as_base<models::pooling_cache<T>>, state_); }
  const models::pooling_cache<T>& pooling() const {
    return std::visit(as_const_base<models::pooling_cache<T>>, state_);
  }
  // The head's scores: logits and each row's log-sum-exp.
  models::head_cache<T>& head() { return std::visit(as_base<models::head_cache<T>>, state_); }
  const models::head_cache<T>& head() const {
    return std::visit(as_const_base<models::head_cache<T>>, state_);
  }
  // A word model's (masked_lm, causal_lm) whole cache; started afresh from any other.
  models::tied_lm_cache<T>& words() { return of<models::tied_lm_cache<T>>(); }
  const models::tied_lm_cache<T>& words() const { return std::get<models::tied_lm_cache<T>>(state_); }
  models::classifier_cache<T>& classifier() { return of<models::classifier_cache<T>>(); }
  const models::classifier_cache<T>& classifier() const {
    return std::get<models::classifier_cache<T>>(state_);
  }

 private:
  template <class C>
  C& of() {
    if (!std::holds_alternative<C>(state_)) state_.template emplace<C>();
    return std::get<C>(state_);
  }
  template <class Base>
  static constexpr auto as_base = [](auto& c) -> Base& { return c; };
  template <class Base>
  static constexpr auto as_const_base = [](const auto& c) -> const Base& { return c; };

  std::variant<models::classifier_cache<T>, models::tied_lm_cache<T>> state_;
};

template <class T>
class network {
 public:
  // Every parameter zero. The shape picks the model: a tied output is a word model (causal: the
  // language model, else the masked-word model), any other the classifier. output_rows: a word
  // model's each class's embedding row [C]; output_cutoffs: its adaptive softmax's cuts
  // c₀ < … < cₙ ≤ C over the classes (most frequent first; adaptive_output.hpp), or none for the
  // full softmax.
  explicit network(const nn::network_shape& shape, std::vector<int64_t> output_rows = {},
                   std::vector<int64_t> output_cutoffs = {});

  const nn::network_shape& shape() const { return shape_; }
  // A word model's three output products (the logits, and their gradients for the hidden rows and
  // the table) on bf16 operands with float32 sums, as PyTorch's autocast runs them: a training
  // choice (attn train --dtype bf16), not part of the model; off, every product is float32. The
  // classifier's products are float32 always.
  void set_output_bf16(bool on);
  // Every parameter in a fixed order, the model file's (the new words' and positional tables only
  // when present).
  std::vector<nn::parameter<T>*> parameters();
  std::vector<const nn::parameter<T>*> parameters() const;

  // Fills cache (logits included) and returns the mean cross-entropy over the batch's rows
  // (0 when it has none or no targets). A nonzero dropout_seed trains: dropout draws its masks
  // from it; 0 evaluates.
  T forward(const nn::batch& b, network_cache<T>& cache, uint64_t dropout_seed = 0) const;
  // Adds the gradients of forward's loss to each trainable parameter's grad.
  void backward(const nn::batch& b, const network_cache<T>& cache);
  void zero_grad();

  // The model, when it is of kind M (models::classifier<T>, masked_lm<T>, causal_lm<T>); else null.
  template <class M>
  const M* as() const { return std::get_if<M>(&model_); }
  template <class M>
  M* as() { return std::get_if<M>(&model_); }
  // The pieces: every model's trunk and pooling; the classifier's MLP head and a word model's
  // tied output (a programming error on another model: std::bad_variant_access).
  models::trunk<T>& trunk() { return std::visit([](auto& m) -> models::trunk<T>& { return m.trunk; }, model_); }
  const models::trunk<T>& trunk() const {
    return std::visit([](const auto& m) -> const models::trunk<T>& { return m.trunk; }, model_);
  }
  models::pooling<T>& pool() { return std::visit([](auto& m) -> models::pooling<T>& { return m.pool; }, model_); }
  models::mlp_head<T>& head() { return std::get<models::classifier<T>>(model_).head; }
  models::tied_output<T>& output() { return words().output; }
  const models::tied_output<T>& output() const { return words().output; }

 private:
  models::tied_lm<T>& words();
  const models::tied_lm<T>& words() const;

  nn::network_shape shape_;
  std::variant<models::classifier<T>, models::masked_lm<T>, models::causal_lm<T>> model_;
};

}  // namespace attn::models
