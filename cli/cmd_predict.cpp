// attn predict: the next word (or the label) a trained model gives a text, then its top K.
#include <fmt/format.h>

#include <memory>

#include "attn/text_model.hpp"
#include "cli_common.hpp"
#include "file_roles.hpp"

namespace attn::cli {

namespace {

struct predict_args {
  std::string model;
  int64_t top = 5;
  std::vector<std::string> text;
};

void run(const predict_args& args) {
  const text_model model = text_model::load(args.model);
  const std::string text = read_text(args.text);
  const prediction p = model.predict(text, std::max<int64_t>(args.top, 1));
  if (!p.unknown.empty())
    warn(fmt::format("{} unknown word{} skipped: {}", p.unknown.size(),
                     p.unknown.size() == 1 ? "" : "s", fmt::join(p.unknown, ", ")));
  std::string out = p.top.front().label + "\n";
  if (args.top > 0) {
    size_t width = 0;
    for (const scored_label& s : p.top) width = std::max(width, s.label.size());
    for (const scored_label& s : p.top)
      out += fmt::format("  {:<{}}  {:.4f}\n", s.label, width, s.probability);
  }
  write_output("-", out);
}

}  // namespace

void add_predict_command(CLI::App& app) {
  auto args = std::make_shared<predict_args>();
  CLI::App* sub = app.add_subcommand(
      "predict", "The next word (or label) a trained model predicts, then the top K");
  reads(sub->add_option("--model", args->model, "Model file from attn train"))->required();
  sub->add_option("--top", args->top, "How many candidates to list (default 5; 0: none)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("text", args->text, "Text (standard input when absent or -)");
  sub->callback([args] { run(*args); });
}

}  // namespace attn::cli
