// train_options::save_steps' files: the model so far beside the run's output, by its step.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "attn/train.hpp"
#include "io/replace_file.hpp"

namespace attn {

std::string snapshot_path(const std::string& output, int64_t step) {
  const std::string extension = ".safetensors";
  const bool has = output.size() > extension.size() &&
                   output.compare(output.size() - extension.size(), extension.size(), extension) == 0;
  const std::string stem = has ? output.substr(0, output.size() - extension.size()) : output;
  return fmt::format("{}.step{}{}", stem, step, has ? extension : "");
}

std::vector<std::string> existing_snapshots(const std::string& output) {
  // snapshot_path(output, N) is prefix + N + suffix, the same file name for every N but its digits.
  const std::string sample = snapshot_path(output, 0);
  const std::filesystem::path dir = std::filesystem::path(output).parent_path();
  const std::string name = std::filesystem::path(sample).filename().string();
  const size_t at = name.rfind(".step0") + 5;
  const std::string prefix = name.substr(0, at), suffix = name.substr(at + 1);
  std::vector<std::string> found;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir.empty() ? "." : dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string f = it->path().filename().string();
    if (f.size() <= prefix.size() + suffix.size() || f.compare(0, prefix.size(), prefix) != 0 ||
        f.compare(f.size() - suffix.size(), suffix.size(), suffix) != 0)
      continue;
    const std::string digits = f.substr(prefix.size(), f.size() - prefix.size() - suffix.size());
    if (std::all_of(digits.begin(), digits.end(), [](char ch) { return ch >= '0' && ch <= '9'; }))
      found.push_back((dir / f).string());
  }
  std::sort(found.begin(), found.end());
  return found;
}

std::string save_snapshot(const std::string& output, int64_t step, const std::string& model_file) {
  const std::string path = snapshot_path(output, step);
  io::replace_file(path, "model file", [&](std::ostream& out) {
    out.write(model_file.data(), static_cast<std::streamsize>(model_file.size()));
  });
  return path;
}

}  // namespace attn
