// Every rank of an attn-mpi run must be given the same command: ranks with other options or
// other copies of a file they each read would compute different things, and the run would
// crash, wait forever or write a wrong result. So before any work the ranks compare their
// command lines and the digests (content_digest.hpp) of those files with rank 0's, and any
// difference stops every rank with one error.
#pragma once

#include <string>
#include <vector>

namespace attn::dist {

struct command_argument {
  std::string text;          // as this rank was given it
  bool names_input = false;  // a file every rank reads itself: compared by contents, not by path
};

// Compares this rank's arguments (argv after the program name) with rank 0's: first the options
// (every argument but the inputs' paths, which may differ: each rank may run in its own
// directory), then the digests of the inputs in order. When any rank's command differs, every
// rank throws the same attn::error (input: exit 2), the first difference of the lowest such
// rank: "options differ between ranks: rank 1 was given '--epochs 1', rank 0 '--epochs 3'" or
// "<file>: differs between ranks (rank 1: …; rank 0: …)". Alone, a rank has nothing to compare.
void agree_on_command(const std::vector<command_argument>& args);

}  // namespace attn::dist
