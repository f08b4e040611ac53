// One optimiser step's gradients, computed shard by shard. A batch is cut into a fixed number of
// shards (runs of consecutive lines); each shard's gradient is computed on its own, scaled to the
// whole batch's mean, and the shards are summed in shard order. The processes of a data-parallel
// run (attn::gradient_exchange) each compute their own shards and swap them, so every process
// sums the same numbers in the same order: the model depends on the number of shards, never on
// how many processes share them. One shard is the plain batch gradient, unchanged.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "attn/train.hpp"
#include "nn/network.hpp"
#include "train/dataset.hpp"

namespace attn::train {

struct step_totals {
  double loss_sum = 0;  // cross-entropy summed over the batch's rows
  int64_t rows = 0, tokens = 0;
};

// Leaves in net's grads (and touched rows) the gradient of the mean loss over the whole group:
// the sum over `shards` shards in shard order. Shard s draws its dropout from
// shard_seed(dropout_seed, s). exchange: null, or the processes sharing the shards
// (shards must then be a multiple of exchange->processes; process p computes the p-th run of
// shards / processes of them).
step_totals sharded_gradients(nn::network<float>& net, const std::vector<const encoded_example*>& group,
                              text_task task, int64_t shards, uint64_t dropout_seed,
                              const gradient_exchange* exchange, nn::network_cache<float>& cache);

// The same for any items (the corpus trainer's windows and masked sentences): `items` items make
// the batch, all_rows predictions in all, and batch_of(begin, end) is the batch of items
// [begin, end). The plain path (one shard, one process) is batch_of(0, items)'s own gradient.
step_totals sharded_gradients(nn::network<float>& net, int64_t items, int64_t all_rows,
                              const std::function<nn::batch(int64_t, int64_t)>& batch_of, int64_t shards,
                              uint64_t dropout_seed, const gradient_exchange* exchange,
                              nn::network_cache<float>& cache);

// Shard s's dropout seed (0 stays 0: no dropout; shard 0 keeps the step's seed).
uint64_t shard_seed(uint64_t step_seed, int64_t shard);

}  // namespace attn::train
