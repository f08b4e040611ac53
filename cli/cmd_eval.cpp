// attn eval: accuracy and loss of a trained model on a data file, as one JSON line.
#include <fmt/format.h>

#include <memory>
#include <nlohmann/json.hpp>

#include "attn/text_model.hpp"
#include "cli_common.hpp"
#include "file_roles.hpp"

namespace attn::cli {

namespace {

struct eval_args {
  std::string model, data;
};

void run(const eval_args& args) {
  const text_model model = text_model::load(args.model);
  const evaluation e = model.evaluate(args.data);
  if (model.config().task == text_task::lm) {
    // Unknown words are <unk> tokens the model predicts like any other (unknown_share says how
    // many): perplexity is only comparable between models with the same vocabulary.
    const nlohmann::json j = {{"perplexity", e.perplexity}, {"loss", e.loss}, {"tokens", e.n},
                              {"unknown_share", e.unknown_share}, {"accuracy", e.accuracy},
                              {"lines", e.lines}};
    write_output("-", j.dump() + "\n");
    return;
  }
  if (e.unknown_words > 0)
    warn(fmt::format("{}: {} words without an embedding", args.data, e.unknown_words));
  if (e.skipped > 0)
    warn(fmt::format("{}: {} of {} {} could not be scored (nothing known to predict from, or a "
                     "{} the model cannot output) and count as wrong",
                     args.data, e.skipped, e.n,
                     model.config().task == text_task::classify ? "lines" : "next words",
                     model.config().task == text_task::classify ? "label" : "word"));
  // n: the predictions counted (every line, or every next word); scored: those the model could
  // make, over which the loss is taken.
  const nlohmann::json j = {{"accuracy", e.accuracy}, {"loss", e.loss}, {"n", e.n},
                            {"lines", e.lines}, {"scored", e.scored}};
  write_output("-", j.dump() + "\n");
}

}  // namespace

void add_eval_command(CLI::App& app) {
  auto args = std::make_shared<eval_args>();
  CLI::App* sub = app.add_subcommand(
      "eval", "Accuracy and loss of a trained model on a data file (a language model: perplexity "
             "over every token): one JSON line");
  reads(sub->add_option("--model", args->model, "Model file from attn train"))->required();
  reads(sub->add_option("--data", args->data, "Data in the model's task format"))->required();
  add_threads_option(sub);
  sub->callback([args] { run(*args); });
}

}  // namespace attn::cli
