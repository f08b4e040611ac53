// attn translate: a translation model (attn train --task translate) translates TEXT, each line
// of --batch FILE, or each line of standard input. Output as Marian writes it: one translation a
// line, in input order; --n-best K: "i ||| text ||| score" lines; --alignment: " ||| i-j …" after
// each translation (Moses pairs, source word i → target word j).
#include <fmt/format.h>

#include <iostream>
#include <memory>

#include "attn/error.hpp"
#include "attn/text_file.hpp"
#include "attn/translation_model.hpp"
#include "cli_common.hpp"
#include "file_roles.hpp"
#include "staged_output.hpp"

namespace attn::cli {

namespace {

struct translate_args {
  std::string model, batch, output = "-";
  std::vector<std::string> text;
  translation_options options;
};

std::string alignment_text(const translation_hypothesis& h) {
  std::string out;
  for (const auto& [i, j] : h.alignment) out += fmt::format("{}{}-{}", out.empty() ? "" : " ", i, j);
  return out;
}

std::string lines_of(const translation& t, int64_t index, const translation_options& o) {
  std::string out;
  if (o.n_best <= 1) {
    out = t.best().text;
    if (o.alignment) out += " ||| " + alignment_text(t.best());
    return out + "\n";
  }
  for (const translation_hypothesis& h : t.hypotheses) {
    out += fmt::format("{} ||| {} ||| {:.6f}", index, h.text, h.score);
    if (o.alignment) out += " ||| " + alignment_text(h);
    out += "\n";
  }
  return out;
}

void run(const translate_args& args) {
  if (!args.batch.empty() && !args.text.empty()) throw_usage("give --batch FILE or TEXT, not both");
  const translation_model model = translation_model::load(args.model);
  std::vector<std::string> sources;
  if (!args.batch.empty()) {
    for_each_line(args.batch, [&](const std::string& line) {  // (checked UTF-8, line by line)
      sources.push_back(!line.empty() && line.back() == '\r' ? line.substr(0, line.size() - 1) : line);
    });
  } else if (!args.text.empty() && args.text != std::vector<std::string>{"-"}) {
    const std::string text = read_text(args.text);
    check_utf8(text, "TEXT", 0);
    sources.push_back(text);
  } else {
    int64_t number = 0;
    for (std::string line; std::getline(std::cin, line);) {
      ++number;
      check_utf8(line, "<stdin>", number);
      sources.push_back(line);
    }
  }
  // Checked before any work (a usage error for --beam 0 even with no input).
  const std::vector<translation> translations = model.translate(sources, args.options);
  staged_output out(args.output);
  for (size_t i = 0; i < translations.size(); ++i)
    out.write(lines_of(translations[i], static_cast<int64_t>(i), args.options));
  out.commit();
}

}  // namespace

void add_translate_command(CLI::App& app) {
  auto args = std::make_shared<translate_args>();
  CLI::App* sub = app.add_subcommand(
      "translate", "Translate with a model of attn train --task translate: beam search (greedy at --beam 1), "
                   "one translation a line in input order");
  reads(sub->add_option("--model", args->model, "Translation model (.safetensors)"))->required();
  reads(sub->add_option("--batch", args->batch,
                        "Translate each line of FILE (sentences of like length together, on every thread)"));
  writes(sub->add_option("-o,--output", args->output, "Output file (default: standard output)"));
  sub->add_option("--beam", args->options.beam, "Beam size (default 5; 1: greedy)");
  sub->add_option("--length-penalty", args->options.length_penalty,
                  "α: hypotheses ranked by log-probability / length^α (default 1, as fairseq, Marian and CTranslate2)");
  sub->add_option("--n-best", args->options.n_best,
                  "Print the K best hypotheses of each input as 'i ||| text ||| score' lines (K ≤ --beam)");
  sub->add_option("--max-length", args->options.max_length,
                  "Target pieces at most (default: twice the source's pieces + 10; a source of any length is "
                  "translated in full)");
  sub->add_flag("--alignment", args->options.alignment,
                "Add ' ||| i-j …' after each translation: each target word's strongest source word in the last "
                "decoder layer's cross-attention (Moses pairs, 0-based)");
  sub->add_option("text", args->text, "Text to translate (standard input, a sentence a line, when absent or -)");
  add_threads_option(sub);
  sub->callback([args, sub] {
    check_file_roles(*sub);
    run(*args);
  });
}

}  // namespace attn::cli
