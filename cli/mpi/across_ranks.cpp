#include "across_ranks.hpp"

#include <algorithm>
#include <string>

namespace attn::cli {

namespace {

// The options whose files every rank reads its own copy of, for each subcommand every rank runs.
// Declared here rather than guessed from the arguments (a value that is an existing file) so that
// an output path, which may exist on one machine only, is never taken for an input. Files that
// rank 0 alone reads (sdpa's arrays, which it sends out in pieces; every file of a subcommand run
// by rank 0 alone) reach the others through rank 0: they cannot differ, nor need they exist on
// the other ranks' machines, so they are not compared.
std::vector<std::string> inputs_read_by_every_rank(const std::string& command) {
  if (command == "train") return {"--data", "--valid", "--vectors"};
  if (command == "embed") return {"--batch", "--vectors", "--model"};  // (with --batch)
  return {};  // sdpa and bench: rank 0 reads or makes the arrays
}

// Values of input options that name no file: the model inside attn, and standard input (which
// reaches rank 0 alone; attn-mpi embed --batch refuses it on every rank).
bool names_a_file(const std::string& option, const std::string& value) {
  return !(option == "--model" && value == "builtin") && !(option == "--batch" && value == "-");
}

}  // namespace

bool shared_across_ranks(int argc, char** argv) {
  if (argc < 2) return false;
  const std::string command = argv[1];
  if (command == "sdpa" || command == "bench" || command == "train") return true;
  if (command != "embed") return false;
  for (int i = 2; i < argc; ++i)
    if (std::string(argv[i]).starts_with("--batch")) return true;
  return false;
}

std::vector<dist::command_argument> command_arguments(int argc, char** argv) {
  std::vector<dist::command_argument> args;
  const std::vector<std::string> inputs = shared_across_ranks(argc, argv)
                                              ? inputs_read_by_every_rank(argv[1])
                                              : std::vector<std::string>{};
  const auto is_input = [&](const std::string& option) {
    return std::find(inputs.begin(), inputs.end(), option) != inputs.end();
  };
  bool value_is_input = false;  // the previous argument was an input option
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const size_t equals = a.find('=');
    if (a.starts_with("--") && equals != std::string::npos && is_input(a.substr(0, equals))) {
      args.push_back({a.substr(0, equals)});
      args.push_back({a.substr(equals + 1), true});
    } else {
      args.push_back({a, value_is_input});
    }
    value_is_input = is_input(a);
    if (args.back().names_input && !names_a_file(args[args.size() - 2].text, args.back().text))
      args.back().names_input = false;
  }
  return args;
}

}  // namespace attn::cli
