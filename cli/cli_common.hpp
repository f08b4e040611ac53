// What every subcommand shares: reading the text argument, loading vectors, writing outputs
// atomically, warnings on stderr.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "attn/npy.hpp"
#include "attn/tensor.hpp"
#include "attn/vectors.hpp"

namespace attn {
class text_model;
}

namespace attn::cli {

// The words of TEXT joined by spaces; standard input when they are absent or "-".
std::string read_text(const std::vector<std::string>& words);

// A --seed value: a whole number from 0 to 2^64 − 1, parsed by attn (CLI11's unsigned conversion
// wraps -1 and 2^64 into valid seeds); anything else is a usage error.
uint64_t parse_seed(const std::string& text);

// --vectors PATH, or the embedded default when path is empty. Warnings go to stderr.
vectors load_vectors(const std::string& path);

// Writes every (path, bytes) pair, or none: each goes to a temporary file beside its target,
// and the temporaries are renamed over the targets only once all were written. "-" is stdout.
void write_outputs(const std::vector<std::pair<std::string, std::string>>& outputs);
inline void write_output(const std::string& path, const std::string& bytes) {
  write_outputs({{path, bytes}});
}

// An .npy input as float32 (bool arrays are refused: `what` names the option).
tensor read_float_npy(const std::string& path, const std::string& what);
// The same from a .npy, or from a file named *.safetensors holding that one tensor: F32, or BF16
// and F16 widened to float32 exactly (so bf16 data loses nothing on the way in).
tensor read_float_tensor(const std::string& path, const std::string& what);
// A mask .npy: float stays additive; bool becomes 0 / -inf with `keep_when` as the True meaning.
tensor read_mask_npy(const std::string& path, bool keep_when);

// Pictures and walkthroughs draw every pair of tokens (N × N cells, three matrices in explain):
// past this many tokens a text is refused with a usage error rather than drawn for minutes into
// a file of gigabytes. embed has no such limit (its memory is linear in N).
constexpr size_t max_picture_tokens = 1000;
// The text, or a usage error naming `command` when it has more tokens than that.
// Whether the path ends with the extension (".svg"), in any case.
bool has_extension(std::string_view path, std::string_view extension);

const std::string& check_picture_length(const std::string& text, const std::string& command);

// A text longer than a trained model's context: one warning on stderr that says how many of
// its tokens the model reads (the last ones). predict, heatmap, embed and neighbors all call it.
void warn_when_cut(const text_model& model, std::string_view text);

// --threads N on a heavy command: OpenMP's thread count for the run (default: all cores).
void add_threads_option(CLI::App* command);

// Checks for numeric options that say what they want: "--batch: must be more than 0, not 0"
// (CLI11's PositiveNumber and NonNegativeNumber name a range up to 1.8e308 instead).
extern const CLI::Validator positive_number;      // > 0
extern const CLI::Validator non_negative_number;  // ≥ 0

void warn(const std::string& message);
bool stdout_is_terminal();

// Each subcommand file adds itself to the app.
void add_bench_command(CLI::App& app);
void add_embed_command(CLI::App& app);
void add_explain_command(CLI::App& app);
void add_heatmap_command(CLI::App& app);
void add_neighbors_command(CLI::App& app);
void add_mha_command(CLI::App& app);
void add_sdpa_command(CLI::App& app);
void add_vectors_command(CLI::App& app);
void add_train_command(CLI::App& app);
void add_predict_command(CLI::App& app);
void add_generate_command(CLI::App& app);
void add_tokenize_command(CLI::App& app);
void add_translate_command(CLI::App& app);
void add_eval_command(CLI::App& app);

}  // namespace attn::cli
