// A head's loss over its logits: the mean cross-entropy of the batch's rows against their
// targets, keeping each row's log-sum-exp for the backward pass. A batch without targets (an
// inference query) has no loss: 0, and no log-sum-exps kept.
#pragma once

#include <cstdint>
#include <vector>

#include "nn/batch.hpp"
#include "nn/cross_entropy.hpp"

namespace attn::models {

template <class T>
T batch_loss(const nn::batch& b, const std::vector<T>& logits, int64_t classes, std::vector<T>& row_lse) {
  row_lse.clear();
  if (b.targets.size() != b.rows.size()) return T(0);
  const auto rows = static_cast<int64_t>(b.rows.size());
  row_lse.resize(b.rows.size());
  return nn::cross_entropy_forward(logits.data(), b.targets.data(), static_cast<T*>(nullptr), rows, classes,
                                   row_lse.data());
}

}  // namespace attn::models
