// The subcommands attn-mpi runs across ranks (ring sdpa and bench, data-parallel train); every
// other subcommand is the plain attn's, run by rank 0 alone (embed --batch: embed_shared.hpp).
#pragma once

#include <CLI/CLI.hpp>

namespace attn::cli {

void add_ring_sdpa_command(CLI::App& app);
void add_ring_bench_command(CLI::App& app);
void add_shared_train_command(CLI::App& app);

}  // namespace attn::cli
