// attn predict: the next word (or the label) a trained model gives a text, then its top K.
#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "attn/error.hpp"
#include "attn/text_model.hpp"
#include "cli_common.hpp"
#include "file_roles.hpp"
#include "staged_output.hpp"

namespace attn::cli {

namespace {

struct predict_args {
  std::string model, batch, output = "-";
  int64_t top = 5;
  std::vector<std::string> text;
};

// --batch: one JSON object per input line, in order, streamed as each is done (JSON Lines, as
// embed --batch writes): {"line", "text", "prediction", "top": [{"label", "probability"}],
// "unknown"}. A line the model cannot read (blank, no known word) gets "prediction": null and
// an "error", with a warning, so record k is always line k.
void run_batch(const predict_args& args, const text_model& model) {
  if (!args.text.empty()) throw_usage("--batch reads the texts from its file; give no TEXT with it");
  const bool from_stdin = args.batch == "-";
  std::ifstream file;
  if (!from_stdin) {
    file.open(args.batch, std::ios::binary);
    if (!file) throw_input(args.batch, fmt::format("cannot open: {}", std::strerror(errno)));
  }
  std::istream& in = from_stdin ? std::cin : file;
  const std::string source = from_stdin ? "<stdin>" : args.batch;
  staged_output out(args.output);
  std::string text;
  for (int64_t line = 1; std::getline(in, text); ++line) {
    if (!text.empty() && text.back() == '\r') text.pop_back();
    nlohmann::json j = {{"line", line}, {"text", text}};
    try {
      const prediction p = model.predict(text, std::max<int64_t>(args.top, 1));
      j["prediction"] = p.top.front().label;
      nlohmann::json top = nlohmann::json::array();
      for (size_t i = 0; i < p.top.size() && static_cast<int64_t>(i) < args.top; ++i)
        top.push_back({{"label", p.top[i].label}, {"probability", p.top[i].probability}});
      j["top"] = top;
      j["unknown"] = p.unknown;
    } catch (const error& e) {
      if (e.kind() != error_kind::usage) throw;
      warn(fmt::format("{}: line {}: {} (a null prediction)", source, line, e.problem()));
      j["prediction"] = nullptr;
      j["error"] = e.problem();
    }
    out.write(j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  }
  if (in.bad()) throw_input(source, fmt::format("cannot read: {}", std::strerror(errno)));
  out.commit();
}

void run(const predict_args& args) {
  const text_model model = text_model::load(args.model);
  if (!args.batch.empty()) {
    run_batch(args, model);
    return;
  }
  const std::string text = read_text(args.text);
  const prediction p = model.predict(text, std::max<int64_t>(args.top, 1));
  warn_when_cut(model, text);
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
      ->check(non_negative_number);
  reads(sub->add_option("--batch", args->batch,
                        "Predict for every line of FILE (- for standard input): JSON Lines, one "
                        "record per line"))
      ->type_name("FILE");
  writes(sub->add_option("-o,--output", args->output,
                         "With --batch: the JSON Lines file (default: standard output)"));
  add_threads_option(sub);
  sub->add_option("text", args->text, "Text (standard input when absent or -)");
  sub->callback([args, sub] {
    check_file_roles(*sub);
    run(*args);
  });
}

}  // namespace attn::cli
