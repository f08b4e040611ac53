// The attn command line as attn and attn-mpi share it: the subcommands with their synopses, and
// the one place errors become exit codes (0 success, 1 usage, 2 input).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace attn::cli {

struct subcommand {
  std::string name;
  std::string synopsis;  // one line (or two), printed after a usage error so the fix is on screen
  void (*add)(CLI::App& app);
};

// The subcommands of the plain attn, in the order --help lists them.
std::vector<subcommand> standard_subcommands();

// Builds the app from `commands`, parses argv and runs the chosen one; returns the exit code.
// With report_errors false the exit code is the same but nothing is printed (attn-mpi's ranks
// other than 0, which fail together with rank 0 and leave the message to it).
int run_app(const std::string& program, const std::string& description,
            const std::vector<subcommand>& commands, int argc, char** argv, bool report_errors);

}  // namespace attn::cli
