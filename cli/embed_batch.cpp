#include "embed_batch.hpp"

#include <fmt/format.h>

#include <omp.h>

#include <cerrno>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <vector>

#include "attn/error.hpp"
#include "attn/npy.hpp"
#include "cli_common.hpp"
#include "embed_records.hpp"
#include "progress.hpp"
#include "staged_output.hpp"

namespace attn::cli {

namespace {

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

// One input line's sentence vector (--pool); source adds the JSON keys naming where it came from.
template <class Source>
std::string sentence_record(const std::string& format, const sentence_choice& sentence,
                            const std::vector<std::string>& tokens, const std::vector<std::string>& unknown,
                            const tensor& rows, int64_t dim, const std::string& text, int64_t line,
                            const Source& source) {
  const std::vector<float> v = tokens.empty() ? std::vector<float>{} : sentence.of(rows);
  if (format == "npy") return sentence_npy_row(v, dim);
  if (format == "csv") return sentence_csv_row(v, dim, line);
  if (format != "json") return sentence_text(v);
  nlohmann::json j = sentence_json(tokens, unknown, v, sentence);
  source(j);
  j["line"] = line;
  j["text"] = text;
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

// CSV's header line (token rows or sentence vectors); other formats have none.
std::string header(const std::string& format, int64_t dim, const sentence_choice& sentence) {
  if (format != "csv") return "";
  return sentence.pool ? sentence_csv_header(dim, /*with_line=*/true) : embed_csv_header(dim, /*with_line=*/true);
}

int64_t npy_columns(const std::string& format, int64_t dim, const sentence_choice& sentence) {
  return format == "npy" && sentence.pool ? dim : 0;
}

// The loop both kinds of embedding share: lines in, records out as each is done, a progress
// bar, and the output staged so that a failure leaves no partial file.
void stream_records(const std::string& input, const std::string& output, const batch_plan& plan) {
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
  out.write(plan.header);
  std::string rows;  // npy_columns: the float32 rows, until the count of lines is known
  unknown_tokens unknown(source, plan.terms, plan.strict, bar);
  // A sentence's products are too small to share among threads, so the lines of a file are
  // shared instead: a block of lines at a time, a line per thread, each line's warnings and
  // error kept and then given in input order with its record, as one thread would. Standard
  // input goes a line at a time, so that a record follows each line piped in.
  const auto threads = static_cast<size_t>(std::max(1, omp_get_max_threads()));
  const size_t block = threads > 1 && !from_stdin ? 16 * threads : 1;
  std::vector<std::string> texts(block), records(block);
  std::vector<std::vector<std::string>> notes(block);
  std::vector<std::exception_ptr> errors(block);
  std::vector<int64_t> ends(block);  // bytes read after each line
  int64_t line = 0, bytes = 0;
  for (bool more = true; more;) {
    size_t n = 0;
    for (; n < block && std::getline(in, texts[n]); ++n) {
      bytes += static_cast<int64_t>(texts[n].size()) + 1;
      ends[n] = bytes;
      if (!texts[n].empty() && texts[n].back() == '\r') texts[n].pop_back();  // CRLF files
    }
    more = n == block;
#pragma omp parallel for schedule(dynamic, 1) if (n > 1)
    for (size_t i = 0; i < n; ++i) {
      notes[i].clear();
      errors[i] = nullptr;
      try {
        unknown_tokens mine(source, plan.terms, plan.strict, bar,
                            [&notes, i](std::string message) { notes[i].push_back(std::move(message)); });
        records[i] = plan.make(texts[i], line + 1 + static_cast<int64_t>(i), mine);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
    for (size_t i = 0; i < n; ++i) {
      for (std::string& message : notes[i]) unknown.note(std::move(message));
      if (errors[i]) std::rethrow_exception(errors[i]);
      if (plan.npy_columns > 0)
        rows += records[i];
      else
        out.write(records[i]);
      bar.update(ends[i], line + 1 + static_cast<int64_t>(i));
    }
    line += static_cast<int64_t>(n);
  }
  if (in.bad()) throw_input(source, fmt::format("cannot read: {}", std::strerror(errno)));
  bar.clear();
  unknown.finish();
  if (plan.npy_columns > 0) {
    std::vector<float> values(rows.size() / sizeof(float));
    std::memcpy(values.data(), rows.data(), values.size() * sizeof(float));
    const auto lines = static_cast<int64_t>(values.size()) / plan.npy_columns;
    out.write(encode_npy(tensor({lines, plan.npy_columns}, std::move(values))));
  }
  out.commit();
}

// The loop given, or the one-process stream_records.
void run_plan(const std::string& input, const std::string& output, const batch_plan& plan,
              const batch_loop& loop) {
  if (loop)
    loop(input, output, plan);
  else
    stream_records(input, output, plan);
}

}  // namespace

void run_embed_batch(const std::string& input, const std::string& output, const std::string& format,
                     const vectors& vocab, const embed_options& options,
                     const sentence_choice& sentence, const batch_loop& loop) {
  const unknown_terms terms{fmt::format("not in the vectors of {}", vocab.source()),
                            "left out of attention, not in the vectors",
                            "no token is in the vectors (an empty record)"};
  const auto known = [&](const std::string& token) { return vocab.lookup(token).has_value(); };
  const int64_t dim = vocab.dim();
  run_plan(
      input, output,
      {header(format, dim, sentence), terms,
       options.strict, [&](const std::string& text, int64_t line, unknown_tokens& unknown) {
        embedding e;
        if (unknown.any_known(tokenize(text), line, known, e.unknown))
          e = embed(text, vocab, options);
        else
          e.steps.scale = options.scale.resolve(vocab.dim());
        if (sentence.pool)
          return sentence_record(format, sentence, e.tokens, e.unknown, e.steps.context, dim, text, line,
                                 [&](nlohmann::json& j) {
                                   j["scale"] = e.steps.scale;
                                   j["vectors"] = vocab.source();
                                 });
        return record(format, e, [&] { return embed_json(e, vocab); }, text, line);
      }, npy_columns(format, dim, sentence)},
      loop);
}

void run_model_embed_batch(const std::string& input, const std::string& output,
                           const std::string& format, const text_model& model,
                           const std::string& model_path, bool strict, const model_reading& how,
                           const batch_loop& loop) {
  const int64_t dim = model.config().dim;
  const unknown_terms terms{fmt::format("not known to the model {}", model_path),
                            "left out of attention, not known to the model",
                            "no token is known to the model (an empty record)"};
  const auto known = [&](const std::string& token) { return model.knows(token); };
  const sentence_choice& sentence = how.sentence;
  run_plan(
      input, output,
      {header(format, dim, sentence), terms, strict,
       [&](const std::string& text, int64_t line, unknown_tokens& unknown) {
        contextual_embedding e;
        if (unknown.any_known(model.tokens(text), line, known, e.unknown)) e = model.embed(text, how.reading, how.layer);
        if (sentence.pool)
          return sentence_record(format, sentence, e.tokens, e.unknown, e.embeddings, dim, text, line,
                                 [&](nlohmann::json& j) {
                                   j["model"] = model_path;
                                   j["dim"] = dim;
                                 });
        return record(format, e, [&] { return embed_json(e, model_path, dim); }, text, line);
      }, npy_columns(format, dim, sentence)},
      loop);
}

}  // namespace attn::cli
