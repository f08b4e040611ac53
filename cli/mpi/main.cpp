// attn-mpi: the attn command line on MPI. sdpa and bench run ring attention across the ranks
// (src/distributed/), embed --batch shares its lines among them, train is data-parallel; the other
// subcommands are the plain attn's and run on rank 0 alone. Without
// mpirun it is one rank. Before any work the ranks agree that they were given the same command;
// errors of the shared subcommands are agreed by all ranks, so rank 0 alone prints them: one
// line, whatever the number of ranks.
#include <fmt/format.h>

#include <string>

#include "across_ranks.hpp"
#include "app.hpp"
#include "distributed/agree.hpp"
#include "file_roles.hpp"
#include "attn/error.hpp"
#include "distributed/session.hpp"
#include "embed_batch.hpp"
#include "embed_shared.hpp"
#include "mpi_commands.hpp"

namespace {

void add_shared_embed_command(CLI::App& app) {
  attn::cli::add_embed_command(app, attn::cli::shared_batch_loop);
}

// The shared subcommands, in place of the plain ones of the same name.
std::vector<attn::cli::subcommand> mpi_subcommands() {
  std::vector<attn::cli::subcommand> commands = attn::cli::standard_subcommands();
  for (attn::cli::subcommand& c : commands) {
    if (c.name == "sdpa") {
      c.synopsis =
          "mpirun -n K attn-mpi sdpa --query Q.npy --key K.npy --value V.npy [--causal] "
          "[--scale S] -o OUT.npy";
      c.add = attn::cli::add_ring_sdpa_command;
    } else if (c.name == "bench") {
      c.synopsis = "mpirun -n K attn-mpi bench [--causal] [--reps R] [--json] B,N,H,D …";
      c.add = attn::cli::add_ring_bench_command;
    } else if (c.name == "train") {
      c.synopsis += "\n       mpirun -n K attn-mpi train … (each rank computes its shards of every batch)";
      c.add = attn::cli::add_shared_train_command;
    } else if (c.name == "embed") {
      c.synopsis +=
          "\n       mpirun -n K attn-mpi embed … --batch FILE (the lines shared among the ranks)";
      c.add = add_shared_embed_command;
    }
  }
  return commands;
}

}  // namespace

int main(int argc, char** argv) {
  attn::dist::session world(argc, argv);
  // First of all, the ranks agree that they were given the same command: the same options and,
  // for the files each reads itself, the same contents (across_ranks.hpp). Otherwise they would
  // compute different things, crash or wait for each other forever.
  try {
    attn::dist::agree_on_command(attn::cli::command_arguments(argc, argv));
  } catch (const attn::error& e) {
    if (attn::dist::rank() == 0) fmt::print(stderr, "error: {}\n", e.what());
    return 2;
  }
  const bool shared = attn::cli::shared_across_ranks(argc, argv);
  if (!shared && attn::dist::rank() != 0) return 0;
  // Shared commands write on rank 0 alone: their outputs are checked there, for every rank.
  if (shared) attn::cli::check_files_through(attn::dist::on_root);
  return attn::cli::run_app("attn-mpi",
                            "attn-mpi: attn on MPI. sdpa and bench run ring attention over the "
                            "ranks (mpirun -n K), embed --batch shares its lines among them, train "
                            "is data-parallel; the other subcommands run on rank 0.",
                            mpi_subcommands(), argc, argv, attn::dist::rank() == 0);
}
