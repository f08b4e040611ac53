// attn tokenize: a text as a model reads it: its tokens, one paragraph a line. A language model
// shows unknown words as <unk> and ends each paragraph with <eos>, as it trains and scores.
#include <fmt/format.h>

#include <memory>

#include "attn/error.hpp"
#include "attn/text_file.hpp"
#include "attn/text_model.hpp"
#include "attn/tokenizer.hpp"
#include "attn/translation_model.hpp"
#include "cli_common.hpp"
#include "file_roles.hpp"
#include "staged_output.hpp"

namespace attn::cli {

namespace {

struct tokenize_args {
  std::string model = "builtin-lm", data, output = "-";
  bool ids = false, table = false;  // a translator: its pieces' ids; its piece table
  std::vector<std::string> text;
};

std::string line_of_tokens(const text_model& model, const std::string& paragraph) {
  const bool eos = kind_of(model.config().task).reads_unknown;
  std::string out;
  for (const std::string& t : model.tokens(paragraph))
    out += (out.empty() ? "" : " ") + (model.knows(t) ? t : std::string("<unk>"));
  if (eos) out += out.empty() ? "<eos>" : " <eos>";
  return out + "\n";
}

// A translator's subword pieces, space-separated (▁ marks where a word starts).
std::string line_of_pieces(const translation_model& model, const std::string& line, bool ids) {
  std::string out;
  if (ids) {
    for (const int32_t id : model.piece_ids(line)) out += fmt::format("{}{}", out.empty() ? "" : " ", id);
  } else {
    for (const std::string& p : model.pieces(line)) out += (out.empty() ? "" : " ") + p;
  }
  return out + "\n";
}

void run(const tokenize_args& args) {
  if (!args.data.empty() && !args.text.empty()) throw_usage("give --data FILE or TEXT, not both");
  if (args.model != "builtin" && args.model != "builtin-lm" && is_translation_model_file(args.model)) {
    const translation_model model = translation_model::load(args.model);
    staged_output out(args.output);
    if (args.table) {
      if (!args.data.empty() || !args.text.empty()) throw_usage("--vocabulary prints the piece table: no text with it");
      for (const std::string& piece : model.piece_table()) out.write(piece + "\n");
    } else if (!args.data.empty()) {
      // Every line, blank ones too: the output stays aligned with the input by line.
      for_each_line(args.data, [&](const std::string& line) { out.write(line_of_pieces(model, line, args.ids)); });
    } else {
      const std::string text = read_text(args.text);
      check_utf8(text, args.text.empty() || args.text == std::vector<std::string>{"-"} ? "<stdin>" : "TEXT", 0);
      out.write(line_of_pieces(model, text, args.ids));
    }
    out.commit();
    return;
  }
  if (args.ids || args.table) throw_usage("--ids and --vocabulary are for a translation model's pieces");
  const text_model model = text_model::load(args.model);
  staged_output out(args.output);
  if (!args.data.empty()) {
    for_each_line(args.data, [&](const std::string& line) {  // plain, .xz or .gz
      if (line.find_first_not_of(" \t\r") != std::string::npos) out.write(line_of_tokens(model, line));
    });
  } else {
    const std::string text = read_text(args.text);
    // Refused as train and eval refuse it: the text is shown as the model would read it.
    check_utf8(text, args.text.empty() || args.text == std::vector<std::string>{"-"} ? "<stdin>" : "TEXT", 0);
    out.write(line_of_tokens(model, text));
  }
  out.commit();
}

}  // namespace

void add_tokenize_command(CLI::App& app) {
  auto args = std::make_shared<tokenize_args>();
  CLI::App* sub = app.add_subcommand(
      "tokenize", "A text as a model reads it: its tokens, one paragraph a line (a language "
                  "model: unknown words as <unk>, each paragraph ended by <eos>)");
  reads(sub->add_option("--model", args->model, "Model (default: builtin-lm)"));
  reads(sub->add_option("--data", args->data, "Text file, one paragraph a line (.xz and .gz read directly)"));
  writes(sub->add_option("-o,--output", args->output, "Output file (default: standard output)"));
  sub->add_option("text", args->text, "Text (standard input when absent or -)");
  sub->add_flag("--ids", args->ids, "A translation model: the pieces' ids instead of the pieces");
  sub->add_flag("--vocabulary", args->table, "A translation model: its piece table, one piece a line (line N: id N - 1)");
  sub->callback([args, sub] {
    check_file_roles(*sub);
    run(*args);
  });
}

}  // namespace attn::cli
