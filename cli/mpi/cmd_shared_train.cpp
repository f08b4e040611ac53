// attn-mpi train: data-parallel training. Every rank reads the data and takes the same steps;
// each computes the gradients of its shards of every batch (one shard per rank unless --shards
// says more), the ranks swap them (src/distributed/all_gather) and each sums all shards in shard
// order. Rank 0 alone prints and writes the model, which equals attn train --shards K's.
#include <CLI/CLI.hpp>

#include "distributed/agree.hpp"
#include "distributed/all_gather.hpp"
#include "distributed/session.hpp"
#include "mpi_commands.hpp"
#include "train_command.hpp"

namespace attn::cli {

void add_shared_train_command(CLI::App& app) {
  static const gradient_exchange world{
      .process = dist::rank(),
      .processes = dist::ranks(),
      .all_gather = dist::all_gather,
      .agreed = dist::on_every_rank,
  };
  add_train_command(app, train_hooks{.exchange = &world, .speaks = dist::rank() == 0});
}

}  // namespace attn::cli
