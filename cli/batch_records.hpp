// What a --batch run of attn embed makes of each input line, apart from the loop that reads the
// lines and writes the records: the plain attn streams them in one process (embed_batch.cpp),
// attn-mpi shares the lines among its ranks (cli/mpi/embed_shared.cpp).
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "attn/error.hpp"
#include "attn/tokenizer.hpp"
#include "cli_common.hpp"
#include "progress.hpp"

namespace attn::cli {

// Lines named one by one in warnings; beyond that only their count, so that a large file with
// many unknown words does not bury the terminal.
inline constexpr int64_t max_line_warnings = 10;

// How messages name an unknown token: the vectors' words, or the model's.
struct unknown_terms {
  std::string strict_reason;  // "not in the vectors of PATH"
  std::string left_out;       // a line with some known tokens
  std::string none_known;     // a line with none: an empty record
};

// Where a rank's warnings go instead of the terminal: attn-mpi's ranks other than 0 hand them to
// rank 0 with their block, so that stderr has them in input order, before any error.
using warning_collector = std::function<void(std::string)>;

// The tokens of each line that the vectors (or the model) do not know. With strict the first
// one is an input error naming the line (the data is at fault, not the command line).
class unknown_tokens {
 public:
  unknown_tokens(std::string source, unknown_terms terms, bool strict, progress_bar& bar,
                 warning_collector collect = nullptr)
      : source_(std::move(source)),
        terms_(std::move(terms)),
        strict_(strict),
        bar_(bar),
        collect_(std::move(collect)) {}

  // Fills unknown; returns whether any token of the line is known (else: an empty record).
  // tokens: the line as the vectors or the model read it (attn::tokenize's words, or a model's
  // pieces: text_model::tokens).
  bool any_known(const std::vector<std::string>& tokens, int64_t line,
                 const std::function<bool(const std::string&)>& known,
                 std::vector<std::string>& unknown) {
    bool any = false;
    if (tokens.empty())  // blank: a record all the same
      note(fmt::format("{}: line {}: blank line (an empty record)", source_, line));
    for (const std::string& token : tokens) {
      if (known(token))
        any = true;
      else
        unknown.push_back(token);
    }
    if (strict_ && !unknown.empty())
      throw_input(source_,
                  fmt::format("unknown token '{}' ({}); drop --strict to leave unknown tokens out",
                              unknown.front(), terms_.strict_reason),
                  fmt::format("line {}", line));
    if (!unknown.empty())
      note(fmt::format("{}: line {}: {}: {}", source_, line,
                       any ? terms_.left_out : terms_.none_known, fmt::join(unknown, " ")));
    return any;
  }

  // A warning about one line: collected, or printed while fewer than max_line_warnings were.
  void note(std::string message) {
    if (collect_) return collect_(std::move(message));
    if (++warned_lines_ > max_line_warnings) return;
    bar_.clear();
    warn(message);
  }

  // The count of lines not named one by one.
  void finish() const {
    if (warned_lines_ > max_line_warnings)
      warn(fmt::format("{}: {} more lines were blank or had tokens left out", source_,
                       warned_lines_ - max_line_warnings));
  }

 private:
  std::string source_;
  unknown_terms terms_;
  bool strict_;
  progress_bar& bar_;
  warning_collector collect_;
  int64_t warned_lines_ = 0;
};

using make_record =
    std::function<std::string(const std::string& text, int64_t line, unknown_tokens& unknown)>;

// One batch run: the output's header (CSV's), how unknown tokens are named, and the record of
// each line (1-based), which also warns about or (strict) refuses its unknown tokens.
struct batch_plan {
  std::string header;
  unknown_terms terms;
  bool strict = false;
  make_record make;
  // > 0: each record is one row of that many float32s (a sentence vector, --format npy), and
  // the output is one .npy array [lines, npy_columns] written when the last line is done.
  int64_t npy_columns = 0;
};

// A loop that reads `input`'s lines and writes the plan's records to `output`, in input order.
using batch_loop = std::function<void(const std::string& input, const std::string& output,
                                      const batch_plan& plan)>;

}  // namespace attn::cli
