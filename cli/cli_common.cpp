#include "cli_common.hpp"

#include <charconv>
#include <limits>
#include <fmt/format.h>
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <iterator>
#include <memory>

#include "attn/error.hpp"
#include "attn/mask.hpp"
#include "attn/text_model.hpp"
#include "attn/safetensors.hpp"
#include "attn/tokenizer.hpp"
#include "output_target.hpp"
#include "staged_output.hpp"

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

uint64_t parse_seed(const std::string& text) {
  uint64_t seed = 0;
  const char* end = text.data() + text.size();
  const auto [at, ec] = std::from_chars(text.data(), end, seed);
  if (text.empty() || ec != std::errc() || at != end)
    throw_usage(fmt::format("--seed '{}': expected a whole number from 0 to {}", text,
                            std::numeric_limits<uint64_t>::max()));
  return seed;
}

vectors load_vectors(const std::string& path) {
  vectors v = path.empty() ? vectors::load_default() : vectors::load(path);
  for (const auto& w : v.warnings()) warn(w);
  return v;
}

void warn(const std::string& message) {
  fmt::print(stderr, "warning: {}\n", escape_for_message(message));
}

bool has_extension(std::string_view path, std::string_view extension) {
  if (path.size() < extension.size()) return false;
  const std::string_view tail = path.substr(path.size() - extension.size());
  return std::equal(tail.begin(), tail.end(), extension.begin(), extension.end(), [](char a, char b) {
    return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
  });
}

const std::string& check_picture_length(const std::string& text, const std::string& command) {
  const size_t n = tokenize(text).size();
  if (n > max_picture_tokens)
    throw_usage(fmt::format("{} draws every pair of tokens; the text has {} tokens, the limit is "
                            "{} (use attn embed for long texts)",
                            command, n, max_picture_tokens));
  return text;
}

void warn_when_cut(const text_model& model, std::string_view text) {
  const text_window w = model.window(text);
  if (w.read < w.tokens)
    warn(fmt::format("the text is longer than the model's context: {} tokens, the model reads the "
                     "last {} (its context)",
                     w.tokens, w.read));
}

void add_threads_option(CLI::App* command) {
  command
      ->add_option_function<int>(
          "--threads", [](int n) { omp_set_num_threads(n); }, "Threads (default: all cores)")
      ->check(CLI::Range(1, 4096));
}

namespace {

CLI::Validator number_check(bool zero_allowed) {
  return CLI::Validator(
      [zero_allowed](std::string& text) -> std::string {
        double value = 0;
        if (!CLI::detail::lexical_cast(text, value)) return fmt::format("'{}' is not a number", text);
        if (zero_allowed ? value >= 0 : value > 0) return "";
        return fmt::format("must be {}, not {}", zero_allowed ? "0 or more" : "more than 0", text);
      },
      zero_allowed ? "NONNEGATIVE" : "POSITIVE");  // the help's words, as CLI11's
}

}  // namespace

const CLI::Validator positive_number = number_check(false);
const CLI::Validator non_negative_number = number_check(true);

bool stdout_is_terminal() { return isatty(STDOUT_FILENO) != 0; }

void write_outputs(const std::vector<std::pair<std::string, std::string>>& outputs) {
  // Regular files first, each into its temporary, renamed only once all were written; then
  // what cannot be staged (standard output, a device, a FIFO), which is written through.
  const auto through = [](const std::string& path) {
    return path == "-" || resolve_output(path).direct;
  };
  std::vector<std::unique_ptr<staged_output>> staged;
  for (const auto& [path, bytes] : outputs) {
    if (through(path)) continue;
    staged.push_back(std::make_unique<staged_output>(path));
    staged.back()->write(bytes);
  }
  for (auto& s : staged) s->commit();
  for (const auto& [path, bytes] : outputs) {
    if (!through(path)) continue;
    staged_output s(path);
    s.write(bytes);
    s.commit();
  }
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
