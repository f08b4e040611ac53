// attn train's flags for the options of attn/train_option_table.hpp, one per row: each parses into
// a train_options of its own, and only those given are applied on top of the task's defaults.
#pragma once

#include <CLI/CLI.hpp>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "attn/train.hpp"
#include "attn/train_option_table.hpp"

namespace attn::cli {

struct train_flags {
  train_options parsed;  // what the flags given said (the others keep train_options{}'s values)
  std::vector<std::pair<const train_option*, CLI::Option*>> flags;

  // The keywords of the options given on the command line.
  std::vector<std::string> given() const;
  bool was_given(const std::string& keyword) const;
  // `o` with every option given set as parsed.
  void apply_given(train_options& o) const;
};

// Adds a flag to `command` for each row of the table the command line spells, the options every
// task takes in `command`'s own group and the others in a group per set of tasks ("Options for
// --task masked-word and lm"), so --help lists them by task.
void add_train_flags(CLI::App* command, const std::shared_ptr<train_flags>& flags);

// Whether the task spelled `task` takes the option (false for a task name attn does not know).
bool task_takes(const std::string& task, const std::string& keyword);

}  // namespace attn::cli
