// attn generate: a language model (--task lm, or the built-in one) continues a prompt, writing
// each word to standard output as it is made.
#include <fmt/format.h>

#include <charconv>
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
};

uint64_t parse_seed(const std::string& text) {
  uint64_t seed = 0;
  const char* end = text.data() + text.size();
  const auto [at, ec] = std::from_chars(text.data(), end, seed);
  if (text.empty() || ec != std::errc() || at != end)
    throw_usage(fmt::format("--seed '{}': expected a whole number from 0 to {}", text,
                            std::numeric_limits<uint64_t>::max()));
  return seed;
}

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
  model.generate(prompt, args.options, [](const std::string& piece) {
    std::fputs(piece.c_str(), stdout);
    std::fflush(stdout);
  });
  std::fputs("\n", stdout);
  std::fflush(stdout);
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
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--temperature", args->options.temperature,
                  "Sampling temperature (default 1; 0: always the most likely word, deterministic)")
      ->check(CLI::Range(0.0, 100.0));
  sub->add_option("--top-k", args->options.top_k, "Sample among the K most likely words (default: all)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--top-p", args->options.top_p,
                  "Sample among the fewest most likely words whose probabilities reach P (default 1)")
      ->check(CLI::Range(0.0, 1.0));
  sub->add_option_function<std::string>(
         "--seed", [args](const std::string& text) { args->options.seed = parse_seed(text); },
         "Random seed (default 0): the same seed, prompt and options give the same words")
      ->type_name("UINT");
  add_threads_option(sub);
  sub->add_option("prompt", args->prompt, "Prompt (none: a new paragraph; -: standard input)");
  sub->callback([args, sub] {
    check_file_roles(*sub);
    run(*args);
  });
}

}  // namespace attn::cli
