// attn eval: accuracy and loss of a trained model on a data file, as one JSON line.
#include <fmt/format.h>

#include <memory>
#include <nlohmann/json.hpp>

#include "attn/error.hpp"
#include "attn/text_file.hpp"
#include "attn/text_model.hpp"
#include "attn/translation_model.hpp"
#include "cli_common.hpp"
#include "file_roles.hpp"

namespace attn::cli {

namespace {

struct eval_args {
  std::string model, data, source, target, translations;
  translation_options options;
  int64_t every = 7;
  uint64_t seed = 0;
  bool every_given = false;
};

std::vector<std::string> lines_of(const std::string& path) {
  std::vector<std::string> lines;
  for_each_line(path, [&](const std::string& line) {
    lines.push_back(!line.empty() && line.back() == '\r' ? line.substr(0, line.size() - 1) : line);
  });
  return lines;
}

// BLEU's and chrF's fields, as both of a translator's evaluations print them.
nlohmann::json scores_json(const translation_scores& s) {
  return {{"bleu", s.bleu}, {"chrf", s.chrf}, {"precisions", s.precisions}, {"brevity_penalty", s.brevity_penalty},
          {"hypothesis_length", s.hypothesis_length}, {"reference_length", s.reference_length},
          {"bleu_signature", s.bleu_signature}, {"chrf_signature", s.chrf_signature}};
}

// A translator: its translations of --source scored against --target (or --data's
// source<TAB>target lines) by BLEU and chrF, and its loss on the references.
void run_translation(const eval_args& args) {
  if (!args.data.empty() && (!args.source.empty() || !args.target.empty()))
    throw_usage("give --source and --target, or --data: not both");
  if (args.data.empty() && (args.source.empty() || args.target.empty()))
    throw_usage("a translation model is scored with --source FILE --target FILE");
  // (read as attn train reads pairs: the same line and UTF-8 checks)
  const sentence_pairs pairs = args.data.empty() ? read_sentence_pairs(args.source, args.target)
                                                 : read_sentence_pairs(args.data);
  const std::vector<std::string>& sources = pairs.sources;
  const std::vector<std::string>& references = pairs.targets;
  const translation_model model = translation_model::load(args.model);
  const translation_evaluation e = model.evaluate(sources, references, args.options);
  nlohmann::json j = scores_json(e.scores);
  j.update({{"loss", e.loss}, {"pairs", e.pairs}, {"skipped", e.skipped}, {"beam", args.options.beam},
            {"length_penalty", args.options.length_penalty}});
  write_output("-", j.dump() + "\n");
}

// Translations already made (by attn translate or any system) scored against references: BLEU
// and chrF as sacreBLEU's defaults give them.
void run_scores(const eval_args& args) {
  if (!args.model.empty() || !args.source.empty() || !args.data.empty())
    throw_usage("--translations scores a file of translations: give it with --target alone (no --model)");
  if (args.target.empty()) throw_usage("--translations needs --target FILE (the references, aligned by line)");
  const std::vector<std::string> hypotheses = lines_of(args.translations), references = lines_of(args.target);
  if (hypotheses.size() != references.size())
    throw_input(args.translations, fmt::format("{} lines, but {} has {} (the files must be aligned by line)",
                                               hypotheses.size(), args.target, references.size()));
  if (hypotheses.empty()) throw_input(args.translations, "no lines to score");
  nlohmann::json j = scores_json(score_translations(hypotheses, references));
  j["lines"] = hypotheses.size();
  write_output("-", j.dump() + "\n");
}

void run(const eval_args& args) {
  if (!args.translations.empty()) {
    run_scores(args);
    return;
  }
  if (args.model.empty()) throw_usage("--model is required (or --translations FILE --target FILE)");
  if (args.model != "builtin" && args.model != "builtin-lm" && is_translation_model_file(args.model)) {
    run_translation(args);
    return;
  }
  if (!args.source.empty() || !args.target.empty())
    throw_usage(fmt::format("--source and --target are for a translation model ({} is not one)", args.model));
  if (args.data.empty()) throw_usage("--data is required");
  const text_model model = text_model::load(args.model);
  const bool masked = kind_of(model.config().task).hides_words;
  if (!masked && args.every_given)
    throw_usage(fmt::format("--every and --seed are for a masked-word model (the model {} is {})",
                            args.model, task_name(model.config().task)));
  const evaluation e = model.evaluate(args.data, args.every, args.seed);
  const text_task task = model.config().task;
  if (masked && e.unknown_words > 0)
    warn(fmt::format("{}: {} words without an embedding, left out of their sentences", args.data,
                     e.unknown_words));
  if (!masked && !kind_of(task).autoregressive) {
    if (e.unknown_words > 0) warn(fmt::format("{}: {} words without an embedding", args.data, e.unknown_words));
    if (e.skipped > 0)
      warn(fmt::format("{}: {} of {} {} could not be scored (nothing known to predict from, or a "
                       "{} the model cannot output) and count as wrong",
                       args.data, e.skipped, e.n, kind_of(task).labelled ? "lines" : "next words",
                       kind_of(task).labelled ? "label" : "word"));
  }
  // One JSON line, the fields attn::evaluation_fields names (Python's evaluate() gives the same).
  nlohmann::json j = nlohmann::json::object();
  for (const evaluation_field& f : evaluation_fields(e, task, args.every, args.seed)) {
    if (f.integer) j[f.name] = f.count;
    else j[f.name] = f.value;
  }
  write_output("-", j.dump() + "\n");
}

}  // namespace

void add_eval_command(CLI::App& app) {
  auto args = std::make_shared<eval_args>();
  CLI::App* sub = app.add_subcommand(
      "eval", "Accuracy and loss of a trained model on a data file (a language model: perplexity "
             "over every token; a masked-word model: the share of hidden words it fills, top-1 "
             "and top-5): one JSON line");
  reads(sub->add_option("--model", args->model, "Model file from attn train"));
  reads(sub->add_option("--translations", args->translations,
                        "Score a file of translations against --target (BLEU and chrF, no model)"));
  reads(sub->add_option("--data", args->data, "Data in the model's task format (a translator: source<TAB>target lines)"));
  reads(sub->add_option("--source", args->source, "A translator: the sentences to translate, one a line"));
  reads(sub->add_option("--target", args->target, "A translator: their reference translations, aligned by line"));
  sub->add_option("--beam", args->options.beam, "A translator: the beam (default 5)");
  sub->add_option("--length-penalty", args->options.length_penalty, "A translator: α of length^α (default 1)");
  sub->add_option("--max-length", args->options.max_length,
                  "A translator: target pieces at most (default: twice the source's + 10)");
  CLI::Option* every = sub->add_option(
      "--every", args->every,
      "masked-word: hide every Nth word of the text and score the model's fills (default 7, "
      "about BERT's 15%)");
  CLI::Option* seed = sub->add_option("--seed", args->seed,
                                      "masked-word: the seed that picks which words are hidden (default 0)");

  add_threads_option(sub);
  sub->callback([args, every, seed, sub] {
    check_file_roles(*sub);
    args->every_given = every->count() > 0 || seed->count() > 0;
    run(*args);
  });
}

}  // namespace attn::cli
