#include "cli_common.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <iterator>

#include "attn/error.hpp"
#include "attn/mask.hpp"
#include "attn/safetensors.hpp"

namespace attn::cli {

std::string read_text(const std::vector<std::string>& words) {
  if (!words.empty() && !(words.size() == 1 && words[0] == "-")) {
    std::string text;
    for (const auto& w : words) text += (text.empty() ? "" : " ") + w;
    return text;
  }
  if (words.empty() && isatty(STDIN_FILENO))
    throw_usage("no TEXT given (pass it as an argument, or - to read standard input)");
  std::string text(std::istreambuf_iterator<char>(std::cin), {});
  return text;
}

vectors load_vectors(const std::string& path) {
  vectors v = path.empty() ? vectors::load_default() : vectors::load(path);
  for (const auto& w : v.warnings()) warn(w);
  return v;
}

void warn(const std::string& message) { fmt::print(stderr, "warning: {}\n", message); }

bool stdout_is_terminal() { return isatty(STDOUT_FILENO) != 0; }

namespace {
void write_all(std::FILE* f, const std::string& bytes, const std::string& path) {
  if (std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size() || std::fflush(f) != 0)
    throw_input(path, fmt::format("cannot write: {}", std::strerror(errno)));
}
}  // namespace

void write_outputs(const std::vector<std::pair<std::string, std::string>>& outputs) {
  std::vector<std::pair<std::string, std::string>> staged;  // (temporary, target)
  auto discard = [&] {
    for (auto& s : staged) std::remove(s.first.c_str());
  };
  try {
    for (const auto& [path, bytes] : outputs) {
      if (path == "-") continue;
      std::string tmp = fmt::format("{}.tmp-{}", path, getpid());
      std::FILE* f = std::fopen(tmp.c_str(), "wb");
      if (!f) throw_input(path, fmt::format("cannot write: {}", std::strerror(errno)));
      staged.emplace_back(tmp, path);
      try {
        write_all(f, bytes, path);
      } catch (...) {
        std::fclose(f);
        throw;
      }
      if (std::fclose(f) != 0)
        throw_input(path, fmt::format("cannot write: {}", std::strerror(errno)));
    }
    for (const auto& [tmp, path] : staged)
      if (std::rename(tmp.c_str(), path.c_str()) != 0)
        throw_input(path, fmt::format("cannot write: {}", std::strerror(errno)));
  } catch (...) {
    discard();
    throw;
  }
  for (const auto& [path, bytes] : outputs)
    if (path == "-") write_all(stdout, bytes, "<stdout>");
}

tensor read_float_npy(const std::string& path, const std::string& what) {
  npy_array a = read_npy(path);
  if (a.dtype != npy_dtype::f32)
    throw_input(path, fmt::format("{} must be float32, got bool", what));
  return a.values;
}

tensor read_float_tensor(const std::string& path, const std::string& what) {
  if (!path.ends_with(".safetensors")) return read_float_npy(path, what);
  safetensors_file file = read_safetensors(path);
  if (file.tensors.size() != 1)
    throw_input(path, fmt::format("{} must be the file's only tensor, found {}", what,
                                  file.tensors.size()));
  return std::move(file.tensors.begin()->second);
}

tensor read_mask_npy(const std::string& path, bool keep_when) {
  npy_array a = read_npy(path);
  return a.dtype == npy_dtype::boolean ? additive_mask_from_bool(a.values, keep_when) : a.values;
}

}  // namespace attn::cli
