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
#include "staged_output.hpp"

namespace attn::cli {

namespace {

struct generate_args {
  std::string model = "builtin-lm";
  std::vector<std::string> prompt;
  generation_options options;
  bool timings = false;
};

// --top-p in (0, 1], as the library checks it (a nucleus that reaches probability 0 holds no
// word); the help shows that range.
const CLI::Validator top_p_range(
    [](std::string& text) -> std::string {
      double value = 0;
      if (!CLI::detail::lexical_cast(text, value)) return fmt::format("'{}' is not a number", text);
      if (value > 0 && value <= 1) return "";
      return fmt::format("must be more than 0 and at most 1, not {}", text);
    },
    "FLOAT in (0 - 1]");

// --length-penalty in [-10, 10], as the library checks it (beyond, the normaliser's powers dwarf
// every log-probability).
const CLI::Validator length_penalty_range(
    [](std::string& text) -> std::string {
      double value = 0;
      if (!CLI::detail::lexical_cast(text, value)) return fmt::format("'{}' is not a number", text);
      if (value >= -10 && value <= 10) return "";
      return fmt::format("must be in [-10, 10], not {}", text);
    },
    "FLOAT in [-10 - 10]");

void run(const generate_args& args) {
  const text_model model = text_model::load(args.model);
  if (!kind_of(model.config().task).autoregressive)
    throw_usage(fmt::format("{}: a {} model cannot generate text; give a language model (attn "
                            "train --task lm, or --model builtin-lm)",
                            args.model, task_name(model.config().task)));
  // No prompt: a new paragraph; "-": the prompt from standard input.
  const std::string prompt = args.prompt.empty() ? std::string() : read_text(args.prompt);
  std::vector<std::string> unknown;
  for (const std::string& t : model.tokens(prompt))
    if (!model.knows(t)) unknown.push_back(t);
  if (!unknown.empty())
    warn(fmt::format("{} prompt word{} outside the model's vocabulary, read as <unk>: {}", unknown.size(),
                     unknown.size() == 1 ? "" : "s", fmt::join(unknown, ", ")));
  // The prompt as typed (a NUL, like any control character, is whitespace to the tokenizer and
  // shows as a space), then each word as it comes, flushed so a pipe sees it at once. Nothing
  // is written before generate has checked the options (it does so before the first word), and
  // a failed write is an error, as for every output (staged_output).
  std::string shown = prompt;
  while (!shown.empty() && (shown.back() == '\n' || shown.back() == '\r')) shown.pop_back();
  std::replace(shown.begin(), shown.end(), '\0', ' ');
  staged_output out("-");
  if (args.options.beam > 0) {  // the search ends before its best line is known: nothing streams
    const generation g = model.generate(prompt, args.options);
    if (g.n_best.empty()) {
      out.write(shown + g.text + "\n");
    } else {  // Marian's n-best, simplified: the score, a tab, the line
      for (const generated_text& t : g.n_best) out.write(fmt::format("{:.4f}\t{}{}\n", t.score, shown, t.text));
    }
    out.commit();
    return;
  }
  bool started = false;
  const auto start = [&] {
    if (started) return;
    started = true;
    out.write(shown);
  };
  // Timings in constant memory: the count, the sum after the first, and the first few
  // hundred tokens' times (enough for every position the report names).
  constexpr int64_t last_position = 1000;
  const auto context_start = static_cast<int64_t>(model.tokens(prompt).size()) + 1;  // the <eos> that starts a text
  const auto kept = static_cast<size_t>(std::max<int64_t>(0, last_position - context_start + 5));
  using clock = std::chrono::steady_clock;
  std::vector<double> seconds;  // each token's, from the previous one (the first: the prompt too)
  int64_t count = 0;
  double first = 0, after_first = 0;
  auto last = clock::now();
  model.generate(prompt, args.options, [&](const std::string& piece) {
    start();
    out.write(piece);
    out.flush();
    const auto now = clock::now();
    const double s = std::chrono::duration<double>(now - last).count();
    last = now;
    (count == 0 ? first : after_first) += s;
    if (seconds.size() < kept) seconds.push_back(s);
    ++count;
  });
  start();
  out.write("\n");
  out.commit();
  if (!args.timings || count == 0) return;
  // llama.cpp-style figures: tokens per second after the first (which reads the prompt), and the
  // time per token around given positions of the context (the cache should make them close).
  nlohmann::json at = nlohmann::json::object();
  for (const int64_t position : {int64_t{10}, int64_t{100}, int64_t{500}, last_position}) {
    const int64_t i = position - context_start;
    if (i < 1 || i + 5 >= count) continue;
    std::vector<double> near(seconds.begin() + i - std::min<int64_t>(i - 1, 5), seconds.begin() + i + 5);
    std::nth_element(near.begin(), near.begin() + static_cast<std::ptrdiff_t>(near.size() / 2), near.end());
    at[std::to_string(position)] = 1000 * near[near.size() / 2];
  }
  const nlohmann::json j = {{"tokens", count}, {"prompt_tokens", context_start},
                            {"first_token_ms", 1000 * first},
                            {"tokens_per_second", count > 1 ? static_cast<double>(count - 1) / after_first : 0.0},
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
      ->check(top_p_range);
  sub->add_option_function<std::string>(
         "--seed", [args](const std::string& text) { args->options.seed = parse_seed(text); },
         "Random seed (default 0): the same seed, prompt and options give the same words")
      ->type_name("UINT");
  CLI::Option* beam =
      sub->add_option("--beam", args->options.beam,
                      "Beam search with N hypotheses instead of sampling (deterministic): prints "
                      "the most probable continuation, its log-probability divided by "
                      "length^A (the length penalty of CTranslate2, fairseq and Marian)")
          ->check(positive_number);
  sub->add_option("--n-best", args->options.n_best,
                  "With --beam: print the K best continuations, best first, one a line: the "
                  "score, a tab, the line (K at most N)")
      ->check(positive_number)
      ->needs(beam);
  sub->add_option("--length-penalty", args->options.length_penalty,
                  "With --beam: A in length^A (default 1; 0: none; more: longer "
                  "texts; less than 0: shorter)")
      ->check(length_penalty_range)
      ->needs(beam);
  sub->add_flag("--ignore-eos", args->options.ignore_eos,
                "Never end at the end of the paragraph: make --max-words tokens (llama.cpp's flag)");
  sub->add_flag("--timings", args->timings,
                "Afterwards, one JSON line on standard error: tokens/s, and ms per token around "
                "positions 10, 100, 500 and 1000 of the context");
  // Beam search draws nothing and streams nothing.
  for (const char* name : {"--temperature", "--top-k", "--top-p", "--seed", "--timings"})
    beam->excludes(sub->get_option(name));
  add_threads_option(sub);
  sub->add_option("prompt", args->prompt, "Prompt (none: a new paragraph; -: standard input)");
  sub->callback([args, sub] {
    check_file_roles(*sub);
    run(*args);
  });
}

}  // namespace attn::cli
