// attn: the command-line tool. Parses, calls the library, prints (cli/app.cpp maps errors to
// exit codes).
#include "app.hpp"
#include "openmp_waits.hpp"

int main(int argc, char** argv) {
  attn::cli::use_short_openmp_spins(argv);
  return attn::cli::run_app("attn",
                            "attn: self-attention on word vectors and tensors, exact and fast.\n"
                            "Word vectors in, contextual embeddings out (see the seeds' pipeline).",
                            attn::cli::standard_subcommands(), argc, argv, true);
}
