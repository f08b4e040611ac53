// train_options::save_steps' files: the model so far beside the run's output, by its step.
#include <fmt/format.h>

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

std::string save_snapshot(const std::string& output, int64_t step, const std::string& model_file) {
  const std::string path = snapshot_path(output, step);
  io::replace_file(path, "model file", [&](std::ostream& out) {
    out.write(model_file.data(), static_cast<std::streamsize>(model_file.size()));
  });
  return path;
}

}  // namespace attn
