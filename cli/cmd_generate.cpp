// attn generate: a language model (--task lm, or the built-in one) continues a prompt, writing
// each word to standard output as it is made.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <nlohmann/json.hpp>
#include <cstdio>
#include <limits>
#include <memory>

#include "attn/error.hpp"
#include "attn/text_model.hpp"
#include "attn/tokenizer.hpp"
#include "cli_common.hpp"
#include "file_roles.hpp"

namespace attn::cli {

namespace {

struct generate_args {
  std::string model = "builtin-lm";
  std::vector<std::string> prompt;
  generation_options options;
  bool timings = false;
};

void run(const generate_args& args) {
  const text_model model = text_model::load(args.model);
  if (model.config().task != text_task::lm)
    throw_usage(fmt::format("{}: a {} model cannot generate text; give a language model (attn "
                            "train --task lm, or --model builtin-lm)",
                            args.model, task_name(model.config().task)));
  // No prompt: a new paragraph; "-": the prompt from standard input.
  const std::string prompt = args.prompt.empty() ? std::string() : read_text(args.prompt);
  std::vector<std::string> unknown;
  for (const std::string& t : tokenize(prompt))
    if (!model.knows(t)) unknown.push_back(t);
  if (!unknown.empty())
    warn(fmt::format("{} prompt word{} outside the model's vocabulary, read as <unk>: {}", unknown.size(),
                     unknown.size() == 1 ? "" : "s", fmt::join(unknown, ", ")));
  // The prompt as typed, then each word as it comes (flushed, so a pipe sees it at once).
  std::string shown = prompt;
  while (!shown.empty() && (shown.back() == '\n' || shown.back() == '\r')) shown.pop_back();
  std::fputs(shown.c_str(), stdout);
  std::fflush(stdout);
  using clock = std::chrono::steady_clock;
  std::vector<double> seconds;  // each token's, from the previous one (the first: the prompt too)
  auto last = clock::now();
  const generation g = model.generate(prompt, args.options, [&](const std::string& piece) {
    std::fputs(piece.c_str(), stdout);
    std::fflush(stdout);
    const auto now = clock::now();
    seconds.push_back(std::chrono::duration<double>(now - last).count());
    last = now;
  });
  std::fputs("\n", stdout);
  std::fflush(stdout);
  if (!args.timings || seconds.empty()) return;
  // llama.cpp-style figures: tokens per second after the first (which reads the prompt), and the
  // time per token around given positions of the context (the cache should make them close).
  const auto context_start = static_cast<int64_t>(g.prompt.size()) + 1;  // the <eos> that starts a text
  nlohmann::json at = nlohmann::json::object();
  for (const int64_t position : {10, 100, 500, 1000}) {
    const int64_t i = position - context_start;
    if (i < 1 || i + 5 >= static_cast<int64_t>(seconds.size())) continue;
    std::vector<double> near(seconds.begin() + i - std::min<int64_t>(i - 1, 5), seconds.begin() + i + 5);
    std::nth_element(near.begin(), near.begin() + static_cast<std::ptrdiff_t>(near.size() / 2), near.end());
    at[std::to_string(position)] = 1000 * near[near.size() / 2];
  }
  double after_first = 0;
  for (size_t i = 1; i < seconds.size(); ++i) after_first += seconds[i];
  const nlohmann::json j = {{"tokens", seconds.size()}, {"prompt_tokens", context_start},
                            {"first_token_ms", 1000 * seconds.front()},
                            {"tokens_per_second", seconds.size() > 1 ? static_cast<double>(seconds.size() - 1) / after_first : 0.0},
                            {"ms_per_token_at", at}};
  fmt::print(stderr, "{}\n", j.dump());
}

}  // namespace

void add_generate_command(CLI::App& app) {
  auto args = std::make_shared<generate_args>();
  CLI::App* sub = app.add_subcommand(
      "generate", "A language model continues the prompt (or starts a paragraph), word by word, "
                  "with a key-value cache; stops at the end of the paragraph or --max-words");
  reads(sub->add_option("--model", args->model,
                        "Language model from attn train --task lm (default: builtin-lm, trained on "
                        "Wikipedia)"));
  sub->add_option("--max-words", args->options.max_words,
                  "Tokens to make at most, punctuation included (default 100)")
      ->check(non_negative_number);
  sub->add_option("--temperature", args->options.temperature,
                  "Sampling temperature (default 1; 0: always the most likely word, deterministic)")
      ->check(CLI::Range(0.0, 100.0));
  sub->add_option("--top-k", args->options.top_k, "Sample among the K most likely words (default: all)")
      ->check(non_negative_number);
  sub->add_option("--top-p", args->options.top_p,
                  "Sample among the fewest most likely words whose probabilities reach P (default 1)")
      ->check(CLI::Range(0.0, 1.0));
  sub->add_option_function<std::string>(
         "--seed", [args](const std::string& text) { args->options.seed = parse_seed(text); },
         "Random seed (default 0): the same seed, prompt and options give the same words")
      ->type_name("UINT");
  sub->add_flag("--ignore-eos", args->options.ignore_eos,
                "Never end at the end of the paragraph: make --max-words tokens (llama.cpp's flag)");
  sub->add_flag("--timings", args->timings,
                "Afterwards, one JSON line on standard error: tokens/s, and ms per token around "
                "positions 10, 100, 500 and 1000 of the context");
  add_threads_option(sub);
  sub->add_option("prompt", args->prompt, "Prompt (none: a new paragraph; -: standard input)");
  sub->callback([args, sub] {
    check_file_roles(*sub);
    run(*args);
  });
}

}  // namespace attn::cli
