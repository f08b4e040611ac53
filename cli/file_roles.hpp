// Which options of a command name files it reads and which name files it writes, declared where
// the options are added (reads(...), writes(...)). check_file_roles() runs before the command's
// work and refuses (a usage error, exit 1, nothing touched) an output that names an input or
// another output — the same file by any path, a link included — and an output that cannot be
// written (output_target.hpp), so a long run cannot fail at its very end. The checking itself is
// the library's (attn/file_roles.hpp), which attn.train in Python runs too.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace attn::cli {

CLI::Option* reads(CLI::Option* option);
CLI::Option* writes(CLI::Option* option);

// A file named by something other than an option's value: (what names it, path), e.g. a
// checkpoint path derived from -o.
using named_file = std::pair<std::string, std::string>;

void check_file_roles(const CLI::App& command, const std::vector<named_file>& more_inputs = {},
                      const std::vector<named_file>& more_outputs = {});

// For an output whose path is only known as the command runs (train's --save-steps snapshots):
// the same check as check_file_roles', against the command's inputs as they are now, just before
// it is written, so a file (or a link to one) that became an input's name meanwhile is refused.
void check_output_is_no_input(const CLI::App& command, const named_file& output);

// attn-mpi, where the ranks run one command together and rank 0 alone writes: the check runs
// through `agreed` (dist::on_root), on rank 0, and its error reaches every rank, so no rank goes
// on to wait for one that failed alone.
void check_files_through(std::function<void(const std::function<void()>&)> agreed);

}  // namespace attn::cli
