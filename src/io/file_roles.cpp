// attn::check_file_roles (attn/file_roles.hpp): one check for the CLI's commands and attn.train.
#include "attn/file_roles.hpp"

#include <fmt/format.h>
#include <sys/stat.h>

#include <filesystem>

#include "attn/error.hpp"

namespace attn {

namespace {

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

struct identified {
  std::string what, path;
  file_identity id;
};

std::vector<identified> identify_all(const std::vector<named_path>& files) {
  std::vector<identified> out;
  for (const named_path& f : files)
    if (!f.path.empty()) out.push_back({f.what, f.path, identify(f.path)});
  return out;
}

}  // namespace

void check_file_roles(const std::vector<named_path>& input_files, const std::vector<named_path>& output_files) {
  const std::vector<identified> inputs = identify_all(input_files), outputs = identify_all(output_files);
  for (size_t i = 0; i < outputs.size(); ++i) {
    const identified& out = outputs[i];
    for (size_t j = 0; j < i; ++j)
      if (same_file(outputs[j].id, out.id))
        throw error(error_kind::usage, out.path,
                    fmt::format("named by both {} and {}; each output needs a file of its own",
                                outputs[j].what, out.what));
    for (const identified& in : inputs)
      if (in.path != "-" && same_file(in.id, out.id))
        throw error(error_kind::usage, out.path,
                    fmt::format("{} would overwrite {}, an input; write it elsewhere", out.what,
                                in.what));
  }
  for (const identified& out : outputs)
    if (out.path != "-") resolve_output(out.path);
}

}  // namespace attn
