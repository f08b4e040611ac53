#include "file_roles.hpp"

#include <fmt/format.h>
#include <sys/stat.h>

#include <filesystem>
#include <map>

#include "attn/error.hpp"
#include "output_target.hpp"

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

// How two paths are told to be one file: the same device and inode when both exist (hard
// links, symbolic links, "./x" and "x"), else the same normalised absolute path.
struct file_identity {
  bool exists = false, device = false;
  dev_t dev = 0;
  ino_t ino = 0;
  std::string canonical;
};

file_identity identify(const std::string& path) {
  file_identity id;
  if (path == "-") {
    id.canonical = "-";
    return id;
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    id.exists = true;
    id.device = S_ISCHR(st.st_mode);
    id.dev = st.st_dev;
    id.ino = st.st_ino;
  }
  std::error_code ec;
  const auto canonical = std::filesystem::weakly_canonical(std::filesystem::absolute(path), ec);
  id.canonical = ec ? path : canonical.string();
  return id;
}

bool same_file(const file_identity& a, const file_identity& b) {
  // Character devices (/dev/null) take any number of writers.
  if (a.device || b.device) return false;
  if (a.exists && b.exists) return a.dev == b.dev && a.ino == b.ino;
  return a.canonical == b.canonical;
}

struct named {
  std::string what, path;
  file_identity id;
};

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
static void declared_files(const CLI::App& command, std::vector<named>& inputs, std::vector<named>& outputs) {
  for (const CLI::Option* option : command.get_options()) {
    const auto it = roles().find(option);
    if (it == roles().end()) continue;
    for (const std::string& path : option->results()) {
      if (path.empty()) continue;
      auto& list = it->second == role::input ? inputs : outputs;
      list.push_back({option->get_name(), path, identify(path)});
    }
  }
}

static void refuse_an_input(const named& out, const std::vector<named>& inputs) {
  for (const named& in : inputs)
    if (in.path != "-" && same_file(in.id, out.id))
      throw error(error_kind::usage, out.path,
                  fmt::format("{} would overwrite {}, an input; write it elsewhere", out.what, in.what));
}

void check_output_is_no_input(const CLI::App& command, const named_file& output) {
  std::vector<named> inputs, outputs;
  declared_files(command, inputs, outputs);
  refuse_an_input({output.first, output.second, identify(output.second)}, inputs);
}

static void check_files_here(const CLI::App& command, const std::vector<named_file>& more_inputs,
                      const std::vector<named_file>& more_outputs) {
  std::vector<named> inputs, outputs;
  declared_files(command, inputs, outputs);
  for (const auto& [what, path] : more_inputs) inputs.push_back({what, path, identify(path)});
  for (const auto& [what, path] : more_outputs) outputs.push_back({what, path, identify(path)});

  for (size_t i = 0; i < outputs.size(); ++i) {
    const named& out = outputs[i];
    for (size_t j = 0; j < i; ++j)
      if (same_file(outputs[j].id, out.id))
        throw error(error_kind::usage, out.path,
                    fmt::format("named by both {} and {}; each output needs a file of its own",
                                outputs[j].what, out.what));
    refuse_an_input(out, inputs);
  }
  for (const named& out : outputs)
    if (out.path != "-") resolve_output(out.path);
}

}  // namespace attn::cli
