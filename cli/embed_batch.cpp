#include "embed_batch.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
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

// How messages name an unknown token: the vectors' words, or the model's.
struct unknown_terms {
  std::string strict_reason;  // "not in the vectors of PATH"
  std::string left_out;       // a line with some known tokens
  std::string none_known;     // a line with none: an empty record
};

// The tokens of each line that the vectors (or the model) do not know. With strict the first
// one is an input error naming the line (the data is at fault, not the command line).
class unknown_tokens {
 public:
  unknown_tokens(std::string source, unknown_terms terms, bool strict, progress_bar& bar)
      : source_(std::move(source)), terms_(std::move(terms)), strict_(strict), bar_(bar) {}

  // Fills unknown; returns whether any token of the line is known (else: an empty record).
  bool any_known(const std::string& text, int64_t line,
                 const std::function<bool(const std::string&)>& known,
                 std::vector<std::string>& unknown) {
    bool any = false;
    for (const std::string& token : tokenize(text)) {
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
    if (!unknown.empty() && ++warned_lines_ <= max_line_warnings) {
      bar_.clear();
      warn(fmt::format("{}: line {}: {}: {}", source_, line,
                       any ? terms_.left_out : terms_.none_known, fmt::join(unknown, " ")));
    }
    return any;
  }

  // The count of lines not named one by one.
  void finish() const {
    if (warned_lines_ > max_line_warnings)
      warn(fmt::format("{}: {} more lines had tokens left out", source_,
                       warned_lines_ - max_line_warnings));
  }

 private:
  std::string source_;
  unknown_terms terms_;
  bool strict_;
  progress_bar& bar_;
  int64_t warned_lines_ = 0;
};

// One input line's record, in the chosen format (json() gives the single run's object).
template <class Embedding, class Json>
std::string record(const std::string& format, const Embedding& e, const Json& json,
                   const std::string& text, int64_t line) {
  if (format == "csv") return embed_csv_rows(e, line);
  if (format != "json") return embed_text(e) + "\n";
  nlohmann::json j = json();
  j["line"] = line;
  j["text"] = text;
  // Invalid UTF-8 in the input is replaced (U+FFFD) rather than failing the whole batch.
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

using make_record =
    std::function<std::string(const std::string& text, int64_t line, unknown_tokens& unknown)>;

// The loop both kinds of embedding share: lines in, records out as each is done, a progress
// bar, and the output staged so that a failure leaves no partial file.
void stream_records(const std::string& input, const std::string& output, const std::string& header,
                    const unknown_terms& terms, bool strict, const make_record& make) {
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
  out.write(header);
  unknown_tokens unknown(source, terms, strict, bar);
  std::string text;
  int64_t line = 0, bytes = 0;
  while (std::getline(in, text)) {
    ++line;
    bytes += static_cast<int64_t>(text.size()) + 1;
    if (!text.empty() && text.back() == '\r') text.pop_back();  // CRLF files
    out.write(make(text, line, unknown));
    bar.update(bytes, line);
  }
  if (in.bad()) throw_input(source, fmt::format("cannot read: {}", std::strerror(errno)));
  bar.clear();
  unknown.finish();
  out.commit();
}

}  // namespace

void run_embed_batch(const std::string& input, const std::string& output, const std::string& format,
                     const vectors& vocab, const embed_options& options) {
  const unknown_terms terms{fmt::format("not in the vectors of {}", vocab.source()),
                            "left out of attention, not in the vectors",
                            "no token is in the vectors (an empty record)"};
  const auto known = [&](const std::string& token) { return vocab.find(token).has_value(); };
  stream_records(
      input, output, format == "csv" ? embed_csv_header(vocab.dim(), /*with_line=*/true) : "",
      terms, options.strict, [&](const std::string& text, int64_t line, unknown_tokens& unknown) {
        embedding e;
        if (unknown.any_known(text, line, known, e.unknown))
          e = embed(text, vocab, options);
        else
          e.steps.scale = options.scale.resolve(vocab.dim());
        return record(format, e, [&] { return embed_json(e, vocab); }, text, line);
      });
}

void run_model_embed_batch(const std::string& input, const std::string& output,
                           const std::string& format, const text_model& model,
                           const std::string& model_path, bool strict) {
  const int64_t dim = model.config().dim;
  const unknown_terms terms{fmt::format("not known to the model {}", model_path),
                            "left out of attention, not known to the model",
                            "no token is known to the model (an empty record)"};
  const auto known = [&](const std::string& token) { return model.knows(token); };
  stream_records(
      input, output, format == "csv" ? embed_csv_header(dim, /*with_line=*/true) : "", terms,
      strict, [&](const std::string& text, int64_t line, unknown_tokens& unknown) {
        contextual_embedding e;
        if (unknown.any_known(text, line, known, e.unknown)) e = model.embed(text);
        return record(format, e, [&] { return embed_json(e, model_path, dim); }, text, line);
      });
}

}  // namespace attn::cli
