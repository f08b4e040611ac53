#include "file_roles.hpp"


#include <map>

#include "attn/file_roles.hpp"

namespace attn::cli {

namespace {

enum class role { input, output };

std::function<void(const std::function<void()>&)>& agreement() {
  static std::function<void(const std::function<void()>&)> agreed;
  return agreed;
}

std::map<const CLI::Option*, role>& roles() {
  static std::map<const CLI::Option*, role> table;
  return table;
}

}  // namespace

CLI::Option* reads(CLI::Option* option) {
  roles()[option] = role::input;
  return option;
}

CLI::Option* writes(CLI::Option* option) {
  roles()[option] = role::output;
  return option;
}

static void check_files_here(const CLI::App& command, const std::vector<named_file>& more_inputs,
                      const std::vector<named_file>& more_outputs);

void check_files_through(std::function<void(const std::function<void()>&)> agreed) {
  agreement() = std::move(agreed);
}

void check_file_roles(const CLI::App& command, const std::vector<named_file>& more_inputs,
                      const std::vector<named_file>& more_outputs) {
  if (agreement()) {
    agreement()([&] { check_files_here(command, more_inputs, more_outputs); });
    return;
  }
  check_files_here(command, more_inputs, more_outputs);
}

// The command's files by role, as its options name them.
static void declared_files(const CLI::App& command, std::vector<named_path>& inputs,
                           std::vector<named_path>& outputs) {
  for (const CLI::Option* option : command.get_options()) {
    const auto it = roles().find(option);
    if (it == roles().end()) continue;
    for (const std::string& path : option->results())
      (it->second == role::input ? inputs : outputs).push_back({option->get_name(), path});
  }
}

void check_output_is_no_input(const CLI::App& command, const named_file& output) {
  std::vector<named_path> inputs, outputs;
  declared_files(command, inputs, outputs);
  attn::check_file_roles(inputs, {{output.first, output.second}});
}

static void check_files_here(const CLI::App& command, const std::vector<named_file>& more_inputs,
                      const std::vector<named_file>& more_outputs) {
  std::vector<named_path> inputs, outputs;
  declared_files(command, inputs, outputs);
  for (const auto& [what, path] : more_inputs) inputs.push_back({what, path});
  for (const auto& [what, path] : more_outputs) outputs.push_back({what, path});
  attn::check_file_roles(inputs, outputs);
}

}  // namespace attn::cli
