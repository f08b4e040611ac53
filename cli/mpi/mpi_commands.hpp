// The subcommands attn-mpi runs across ranks; every other subcommand is the plain attn's, run by
// rank 0 alone.
#pragma once

#include <CLI/CLI.hpp>

namespace attn::cli {

void add_ring_sdpa_command(CLI::App& app);
void add_ring_bench_command(CLI::App& app);

}  // namespace attn::cli
