#include "embed_batch.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "attn/error.hpp"
#include "attn/tokenizer.hpp"
#include "cli_common.hpp"
#include "embed_records.hpp"
#include "progress.hpp"
#include "staged_output.hpp"

namespace attn::cli {

namespace {

// Lines named one by one in warnings; beyond that only their count, so that a large file with
// many unknown words does not bury the terminal.
constexpr int64_t max_line_warnings = 10;

class batch_embedder {
 public:
  batch_embedder(std::string source, const vectors& vocab, const embed_options& options,
                 progress_bar& bar)
      : source_(std::move(source)), vocab_(vocab), options_(options), bar_(bar) {}

  // The count of lines not named one by one.
  void finish() const {
    if (warned_lines_ > max_line_warnings)
      warn(fmt::format("{}: {} more lines had tokens left out", source_,
                       warned_lines_ - max_line_warnings));
  }

  embedding operator()(const std::string& text, int64_t line) {
    std::vector<std::string> unknown;
    bool any_known = false;
    for (const std::string& token : tokenize(text)) {
      if (vocab_.find(token))
        any_known = true;
      else
        unknown.push_back(token);
    }
    // The data is at fault here, not the command line: an input error with the line.
    if (options_.strict && !unknown.empty())
      throw_input(source_,
                  fmt::format("unknown token '{}' (not in the vectors of {}); drop --strict to "
                              "leave unknown tokens out",
                              unknown.front(), vocab_.source()),
                  fmt::format("line {}", line));
    if (!unknown.empty()) note_unknown(unknown, line, any_known);
    if (!any_known) {
      embedding empty;
      empty.unknown = std::move(unknown);
      empty.steps.scale = options_.scale.resolve(vocab_.dim());
      return empty;
    }
    return embed(text, vocab_, options_);
  }

 private:
  void note_unknown(const std::vector<std::string>& unknown, int64_t line, bool any_known) {
    if (++warned_lines_ > max_line_warnings) return;
    bar_.clear();
    warn(fmt::format("{}: line {}: {}: {}", source_, line,
                     any_known ? "left out of attention, not in the vectors"
                               : "no token is in the vectors (an empty record)",
                     fmt::join(unknown, " ")));
  }

  std::string source_;
  const vectors& vocab_;
  const embed_options& options_;
  progress_bar& bar_;
  int64_t warned_lines_ = 0;
};

std::string json_record(const embedding& e, const vectors& vocab, const std::string& text,
                        int64_t line) {
  nlohmann::json j = embed_json(e, vocab);
  j["line"] = line;
  j["text"] = text;
  // Invalid UTF-8 in the input is replaced (U+FFFD) rather than failing the whole batch.
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace

void run_embed_batch(const std::string& input, const std::string& output, const std::string& format,
                     const vectors& vocab, const embed_options& options) {
  const bool from_stdin = input == "-";
  const std::string source = from_stdin ? "<stdin>" : input;
  std::ifstream file;
  if (!from_stdin) {
    file.open(input, std::ios::binary);
    if (!file) throw_input(input, fmt::format("cannot open: {}", std::strerror(errno)));
  }
  std::istream& in = from_stdin ? std::cin : file;
  // Progress counts bytes of a regular file; for a pipe, only the sentences done.
  std::error_code size_error;
  const auto size = from_stdin ? 0 : std::filesystem::file_size(input, size_error);
  // Records going to the terminal would be torn by the bar's redraws: no bar then.
  progress_bar bar(size_error ? 0 : static_cast<int64_t>(size), "sentences",
                   !(output == "-" && stdout_is_terminal()));

  staged_output out(output);
  if (format == "csv") out.write(embed_csv_header(vocab.dim(), /*with_line=*/true));
  batch_embedder embed_line(source, vocab, options, bar);
  std::string text;
  int64_t line = 0, bytes = 0;
  while (std::getline(in, text)) {
    ++line;
    bytes += static_cast<int64_t>(text.size()) + 1;
    if (!text.empty() && text.back() == '\r') text.pop_back();  // CRLF files
    const embedding e = embed_line(text, line);
    if (format == "json")
      out.write(json_record(e, vocab, text, line));
    else if (format == "csv")
      out.write(embed_csv_rows(e, line));
    else
      out.write(embed_text(e) + "\n");
    bar.update(bytes, line);
  }
  if (in.bad()) throw_input(source, fmt::format("cannot read: {}", std::strerror(errno)));
  bar.clear();
  embed_line.finish();
  out.commit();
}

}  // namespace attn::cli
