// How attn-mpi spreads a subcommand over the ranks: which subcommands every rank takes part in,
// and which of their options name files that every rank reads itself (the ranks compare those
// files' contents before any work: src/distributed/same_command.hpp).
#pragma once

#include <vector>

#include "distributed/same_command.hpp"

namespace attn::cli {

// sdpa, bench, train and embed --batch; the other subcommands run on rank 0 alone.
bool shared_across_ranks(int argc, char** argv);

// argv after the program name, "--option=value" split in two, each value of an option that
// names a file every rank reads marked as an input.
std::vector<dist::command_argument> command_arguments(int argc, char** argv);

}  // namespace attn::cli
