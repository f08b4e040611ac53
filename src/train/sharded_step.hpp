// One optimiser step's gradients, computed shard by shard. A batch is cut into a fixed number of
// shards (runs of consecutive lines); each shard's gradient is computed on its own, scaled to the
// whole batch's mean, and the shards are summed in shard order. The processes of a data-parallel
// run (attn::gradient_exchange) each compute their own shards and swap them, so every process
// sums the same numbers in the same order: the model depends on the number of shards, never on
// how many processes share them. One shard is the plain batch gradient, unchanged.
//
// Within a process, a step's shards run side by side, one per OpenMP thread, each thread on its
// own copy of the network (shard_copies): a batch of short sentences is many small products
// that two threads split badly (they wait on each other at every one), while two shards each
// keep a core busy on their own. The kernels give the same bits on any number of threads, so
// the model is the same whether the shards ran side by side or one after another.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "attn/train.hpp"
#include "models/network.hpp"
#include "train/dataset.hpp"

namespace attn::train {

struct step_totals {
  double loss_sum = 0;  // cross-entropy summed over the batch's rows
  int64_t rows = 0, tokens = 0;
};

// The network's copies on which shards run beside the one on the network itself (thread 0's),
// kept by the trainer from step to step: made on first use, their trainable values refreshed
// from the network at every step.
struct shard_copies {
  std::vector<models::network<float>> nets;
  std::vector<models::network_cache<float>> caches;
};

// Leaves in net's grads (and touched rows) the gradient of the mean loss over the whole group:
// the sum over `shards` shards in shard order. Shard s draws its dropout from
// shard_seed(dropout_seed, s). exchange: null, or the processes sharing the shards
// (shards must then be a multiple of exchange->processes; process p computes the p-th run of
// shards / processes of them).
step_totals sharded_gradients(models::network<float>& net, const std::vector<const encoded_example*>& group,
                              text_task task, int64_t shards, uint64_t dropout_seed,
                              const gradient_exchange* exchange, models::network_cache<float>& cache,
                              shard_copies* copies = nullptr);

// The same for any items (the corpus trainer's windows and masked sentences): `items` items make
// the batch, all_rows predictions in all, and batch_of(begin, end) is the batch of items
// [begin, end). The plain path (one shard, one process) is batch_of(0, items)'s own gradient.
// copies: null, or where the shards running beside thread 0's keep their networks (null: the
// shards run one after another); batch_of is then called from several threads at once.
step_totals sharded_gradients(models::network<float>& net, int64_t items, int64_t all_rows,
                              const std::function<nn::batch(int64_t, int64_t)>& batch_of, int64_t shards,
                              uint64_t dropout_seed, const gradient_exchange* exchange,
                              models::network_cache<float>& cache, shard_copies* copies = nullptr);

// Any model's shards (the translator's): shard_gradient(begin, end, seed) leaves in the parameters'
// grads (cleared before each call) the gradient of the mean loss over items [begin, end) and
// returns its totals. The shards run in turn on the model itself (its products use every thread)
// and are summed from their bytes in shard order, as the processes of a data-parallel run sum
// them, so --shards K in one process gives attn-mpi's K ranks' model bit for bit.
step_totals sharded_gradients(const std::vector<nn::parameter<float>*>& params, int64_t items, int64_t all_rows,
                              const std::function<step_totals(int64_t, int64_t, uint64_t)>& shard_gradient,
                              int64_t shards, uint64_t dropout_seed, const gradient_exchange* exchange);

// The shards' bytes (this process's, in order) exchanged with the other processes (when there
// are) and added into the parameters' grads (cleared) in shard order: their totals summed.
step_totals sum_exchanged_shards(const std::vector<nn::parameter<float>*>& params,
                                 const std::vector<std::vector<char>>& computed, int64_t shards,
                                 const gradient_exchange* exchange);

// Shard s's dropout seed (0 stays 0: no dropout; shard 0 keeps the step's seed).
uint64_t shard_seed(uint64_t step_seed, int64_t shard);

}  // namespace attn::train
