// `attn embed --batch FILE`: one sentence per line in, one record per line out, streamed.
//   json  JSON Lines: {"line", "text", "tokens", "embeddings", "attention", "unknown", "scale",
//         "vectors"} per input line (with --model: {"line", "text", "tokens", "embeddings",
//         "unknown", "model", "dim"})
//   csv   one header "line,token,d0,…", then a row per token with its input line number
//   text  per input line, "token v1 … vd" lines, then one blank line (an empty record is the
//         blank line alone), so record k is input line k
//   npy   with --pool only: one array [lines, d]
// With --pool each record is the line's sentence vector instead: json {"line", "text",
// "tokens", "embedding", "pool", "normalized", "unknown", …}, csv "line,d0,…" rows, text one
// line "v1 … vd" per input line.
// A line with no known token (a blank one included) gives an empty record; with strict, an
// unknown token is an input error naming the file and line.
#pragma once

#include <string>

#include "attn/embed.hpp"
#include "attn/text_model.hpp"
#include "batch_records.hpp"
#include "embed_records.hpp"

namespace CLI {
class App;
}

namespace attn::cli {

// input: a path, or "-" for standard input; output: a path (written atomically) or "-".
// loop: who reads the lines and writes the records; empty for one process streaming them.
void run_embed_batch(const std::string& input, const std::string& output, const std::string& format,
                     const vectors& vocab, const embed_options& options,
                     const sentence_choice& sentence = {}, const batch_loop& loop = {});

// How a trained model reads each line: its token reading and, with a pool, one vector a line.
struct model_reading {
  token_reading reading = token_reading::visible;
  int64_t layer = -1;  // the encoder layer read (-1: the last)
  sentence_choice sentence;
};

// The same with a trained model's contextual embeddings (attn embed --model); model_path names
// the model in the records and messages.
void run_model_embed_batch(const std::string& input, const std::string& output,
                           const std::string& format, const text_model& model,
                           const std::string& model_path, bool strict,
                           const model_reading& how = {}, const batch_loop& loop = {});

// attn embed with `loop` running its --batch runs (attn-mpi's shares the lines among ranks).
void add_embed_command(CLI::App& app, const batch_loop& loop);

}  // namespace attn::cli
