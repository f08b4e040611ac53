#include "train/translation_training.hpp"

#include <algorithm>
#include <cmath>

#include "attn/error.hpp"
#include "nn/autocast.hpp"
#include "train/corpus_batches.hpp"  // mix_seeds
#include "train/rng.hpp"

namespace attn::train {

void initialise(models::translator<float>& model, rng& r) {
  std::vector<nn::parameter<float>*> all;
  model.append_parameters(all);
  const double embedding_scale = 1.0 / std::sqrt(static_cast<double>(model.shape().width));
  for (nn::parameter<float>* p : all) {
    const bool norm = p->name.find(".norm") != std::string::npos;
    if (p->shape.size() == 1) {  // biases 0; a layer norm's weight 1
      std::fill(p->value.begin(), p->value.end(), norm && p->name.ends_with(".weight") ? 1.0f : 0.0f);
      continue;
    }
    if (p == &model.embedding) {
      for (float& v : p->value) v = static_cast<float>(r.normal() * embedding_scale);
      continue;
    }
    const double bound = std::sqrt(6.0 / static_cast<double>(p->shape[0] + p->shape[1]));
    for (float& v : p->value) v = static_cast<float>(r.uniform(-bound, bound));
  }
}

std::vector<nn::parameter<float>*> translator_trainable::parameters() {
  std::vector<nn::parameter<float>*> all;
  model_.append_parameters(all);
  return all;
}

step_totals translator_trainable::gradients(const step_batch& b, int64_t shards, const gradient_exchange* exchange) {
  const std::vector<nn::parameter<float>*> params = parameters();
  const nn::bf16_autocast autocast(bf16_);
  // The gradient of the mean loss over items [begin, end), and its totals.
  const auto shard_gradient = [&](int64_t begin, int64_t end, uint64_t dropout_seed) {
    const models::translation_batch batch = b.translation(begin, end);
    const float loss = model_.forward(batch, cache_, dropout_seed);
    model_.backward(batch, cache_);
    step_totals t;
    t.rows = static_cast<int64_t>(cache_.rows.size());
    t.loss_sum = static_cast<double>(loss) * static_cast<double>(t.rows);
    for (int64_t id : batch.source) t.tokens += id >= 0 ? 1 : 0;
    t.tokens += t.rows;  // each predicted target position is a target token read
    return t;
  };
  if (shards == 1 && (exchange == nullptr || exchange->processes == 1)) {  // the plain batch gradient
    for (nn::parameter<float>* p : params) p->clear_grad();
    return shard_gradient(0, b.items, b.dropout_seed);
  }
  return sharded_gradients(params, b.items, b.rows, shard_gradient, shards, b.dropout_seed, exchange);
}

double translator_trainable::step_flops(const step_batch& b, const step_totals& t) const {
  const models::translator_shape& s = model_.shape();
  const double e = static_cast<double>(s.width), f = static_cast<double>(s.feedforward);
  const double target = static_cast<double>(t.rows), source = static_cast<double>(t.tokens) - target;
  const double pairs = std::max<double>(1.0, static_cast<double>(b.items));
  const double encoder_weights = 4 * e * e + 2 * e * f, decoder_weights = 8 * e * e + 2 * e * f;
  double flops = 6.0 * (static_cast<double>(s.encoder_layers) * encoder_weights * source +
                        static_cast<double>(s.decoder_layers) * decoder_weights * target);
  flops += 6.0 * static_cast<double>(s.vocabulary) * e * target;
  flops += 12.0 * e *
           (static_cast<double>(s.encoder_layers) * source * (source / pairs) +
            static_cast<double>(s.decoder_layers) * target * (target / pairs + source / pairs));
  return flops;
}

// Mean cross-entropy per target piece (no label smoothing: the model's own probabilities) and
// next-piece accuracy over the pairs, teacher-forced, in batches of like length.
scored_examples score_pairs(const models::translator<float>& model, const std::vector<encoded_pair>& pairs,
                             int64_t batch_tokens) {
  double loss = 0;
  int64_t correct = 0, n = 0;
  models::translator_cache<float> cache;
  const int64_t v = model.shape().vocabulary;
  for (const std::vector<int64_t>& indices : length_batches(pairs, batch_tokens, 0)) {
    const models::translation_batch b = make_translation_batch(pairs, indices);
    model.forward(b, cache, 0);
    for (size_t r = 0; r < cache.targets.size(); ++r) {
      const float* row = cache.logits.data() + static_cast<int64_t>(r) * v;
      const int64_t target = cache.targets[r];
      loss += static_cast<double>(cache.row_lse[r]) - static_cast<double>(row[target]);
      correct += std::max_element(row, row + v) - row == target ? 1 : 0;
    }
    n += static_cast<int64_t>(cache.targets.size());
  }
  return {.loss = n > 0 ? loss / static_cast<double>(n) : 0.0,
          .accuracy = n > 0 ? static_cast<double>(correct) / static_cast<double>(n) : 0.0,
          .n = n};
}

translation_batches::translation_batches(const std::vector<encoded_pair>& pairs, int64_t max_tokens, uint64_t seed)
    : pairs_(pairs), max_tokens_(max_tokens), seed_(seed) {
  // (how pairs fall into batches does not depend on the seed: only their order does)
  part_steps_ = {static_cast<int64_t>(length_batches(pairs_, max_tokens_, seed_).size())};
}

int64_t translation_batches::begin_part(int64_t epoch, int64_t, bool) {
  batches_ = length_batches(pairs_, max_tokens_, mix_seeds(seed_, static_cast<uint64_t>(epoch)));
  return static_cast<int64_t>(batches_.size());
}

step_batch translation_batches::batch(int64_t index, int64_t step) {
  const std::vector<int64_t>& indices = batches_[static_cast<size_t>(index)];
  step_batch b;
  b.items = static_cast<int64_t>(indices.size());
  for (int64_t i : indices) b.rows += static_cast<int64_t>(pairs_[static_cast<size_t>(i)].target.size());
  rng r(mix_seeds(seed_ ^ 0x7472616eULL, static_cast<uint64_t>(step)));
  b.dropout_seed = r.next() | 1;  // never 0, which means evaluating
  b.translation = [this, &indices](int64_t begin, int64_t end) {
    return make_translation_batch(pairs_, std::span<const int64_t>(indices).subspan(static_cast<size_t>(begin),
                                                                                    static_cast<size_t>(end - begin)));
  };
  return b;
}

}  // namespace attn::train
