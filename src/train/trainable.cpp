// The text models as the training loop sees them (see trainable.hpp).
#include "train/trainable.hpp"

#include <algorithm>

#include "train/loop.hpp"

namespace attn::train {

network_trainable::network_trainable(models::network<float>& net) : net_(net) {
  for (const nn::parameter<float>* q : net.parameters())
    if (q->row_width == 0 && q->name != "position.weight")  // (the positional table is a lookup too)
      dense_weights_ += static_cast<int64_t>(q->value.size());
}

step_totals network_trainable::gradients(const step_batch& b, int64_t shards, const gradient_exchange* exchange) {
  return sharded_gradients(net_, b.items, b.rows, b.batch_of, shards, b.dropout_seed, exchange, cache_, &copies_);
}

// 6 FLOPs per dense weight and token (2 forward, 4 backward), a tied output's products for each
// predicted row, and attention's 12 per layer, width and pair of tokens (scores and the weighted
// sum, forward and backward) at the batch's mean length. Embedding lookups are no products:
// row-sparse tables count only as a tied output.
double network_trainable::step_flops(const step_batch& b, const step_totals& t) const {
  const nn::network_shape& s = net_.shape();
  const auto tokens = static_cast<double>(t.tokens);
  const double length = b.items > 0 ? tokens / static_cast<double>(b.items) : 0.0;
  double flops = 6.0 * static_cast<double>(dense_weights_) * tokens;
  if (s.tied_output) flops += 6.0 * static_cast<double>(s.classes) * static_cast<double>(s.embed) * static_cast<double>(t.rows);
  flops += 12.0 * static_cast<double>(std::max<int64_t>(s.layers, 1)) * static_cast<double>(s.width) * tokens * length;
  return flops;
}

}  // namespace attn::train
