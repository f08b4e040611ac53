// attn eval: accuracy and loss of a trained model on a data file, as one JSON line.
#include <fmt/format.h>

#include <memory>
#include <nlohmann/json.hpp>

#include "attn/error.hpp"
#include "attn/text_model.hpp"
#include "cli_common.hpp"
#include "file_roles.hpp"

namespace attn::cli {

namespace {

struct eval_args {
  std::string model, data;
  int64_t every = 7;
  uint64_t seed = 0;
  bool every_given = false;
};

void run(const eval_args& args) {
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
  reads(sub->add_option("--model", args->model, "Model file from attn train"))->required();
  reads(sub->add_option("--data", args->data, "Data in the model's task format"))->required();
  CLI::Option* every = sub->add_option(
      "--every", args->every,
      "masked-word: hide every Nth word of the text and score the model's fills (default 7, "
      "about BERT's 15%)");
  CLI::Option* seed = sub->add_option("--seed", args->seed,
                                      "masked-word: the seed that picks which words are hidden (default 0)");

  add_threads_option(sub);
  sub->callback([args, every, seed] {
    args->every_given = every->count() > 0 || seed->count() > 0;
    run(*args);
  });
}

}  // namespace attn::cli
