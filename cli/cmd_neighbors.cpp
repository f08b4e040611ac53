// attn neighbors: the vocabulary words nearest to a word's static vector and to its contextual
// vector in a text, side by side, and how far the word moved toward each word of the text.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <set>

#include "attn/embed.hpp"
#include "attn/error.hpp"
#include "attn/tokenizer.hpp"
#include "cli_common.hpp"

namespace attn::cli {

namespace {

struct neighbors_args {
  std::string vectors_path, scale = "sqrt", word;
  int64_t top = 10;
  std::vector<std::string> text;
};

double cosine(std::span<const float> a, std::span<const float> b) {
  double dot = 0, na = 0, nb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    dot += double(a[i]) * b[i];
    na += double(a[i]) * a[i];
    nb += double(b[i]) * b[i];
  }
  return na > 0 && nb > 0 ? dot / std::sqrt(na * nb) : 0.0;
}

// The k nearest, leaving the word itself out (it is always its own nearest).
std::vector<neighbor> nearest_others(const vectors& vocab, std::span<const float> v, int64_t k,
                                     int64_t self) {
  auto found = vocab.nearest(v, k + 1);
  std::erase_if(found, [&](const neighbor& n) { return n.index == self; });
  if (static_cast<int64_t>(found.size()) > k) found.resize(static_cast<size_t>(k));
  return found;
}

void run(const neighbors_args& args) {
  vectors vocab = load_vectors(args.vectors_path);
  const std::string text = read_text(args.text);
  embedding e = embed(text, vocab, {scale_spec::parse(args.scale), false});

  auto word_tokens = tokenize(args.word);
  if (word_tokens.size() != 1) throw_usage("--word must be a single word, got '" + args.word + "'");
  const std::string& word = word_tokens.front();
  auto position = std::find(e.tokens.begin(), e.tokens.end(), word);
  if (position == e.tokens.end()) {
    bool unknown = std::find(e.unknown.begin(), e.unknown.end(), word) != e.unknown.end();
    throw_usage(unknown ? fmt::format("'{}' is not in the vectors of {}", word, vocab.source())
                        : fmt::format("'{}' is not a token of the text", word));
  }
  const int64_t row = position - e.tokens.begin(), d = vocab.dim();
  const int64_t self = *vocab.find(word);
  std::span<const float> static_vec(e.static_vectors.data() + row * d, static_cast<size_t>(d));
  std::span<const float> context_vec(e.steps.context.data() + row * d, static_cast<size_t>(d));

  std::string out = fmt::format("\"{}\" in: {}\n", word, fmt::join(e.tokens, " "));
  if (!e.unknown.empty()) out += fmt::format("left out (not in the vectors): {}\n", fmt::join(e.unknown, " "));
  out += fmt::format("vectors: {} ({} words, {} dims); scale {:.6g}; cosine similarity\n\n",
                     vocab.source(), vocab.size(), d, e.steps.scale);

  auto before = nearest_others(vocab, static_vec, args.top, self);
  auto after = nearest_others(vocab, context_vec, args.top, self);
  const std::string left_title = fmt::format("static \"{}\"", word);
  const std::string right_title = fmt::format("contextual \"{}\"", word);
  out += fmt::format("  {:<30} {}\n", left_title, right_title);
  for (size_t i = 0; i < std::max(before.size(), after.size()); ++i) {
    std::string left, right;
    if (i < before.size())
      left = fmt::format("{:>3}  {:<16} {:.4f}", i + 1, vocab.word(before[i].index), before[i].similarity);
    if (i < after.size())
      right = fmt::format("{:>3}  {:<16} {:.4f}", i + 1, vocab.word(after[i].index), after[i].similarity);
    out += fmt::format("  {:<30} {}\n", left, right);
  }

  // How the word moved: its similarity to each other word of the text, before and after.
  struct move { std::string token; double before, after; };
  std::vector<move> moves;
  std::set<std::string> seen{word};
  for (size_t t = 0; t < e.tokens.size(); ++t) {
    if (!seen.insert(e.tokens[t]).second) continue;
    std::span<const float> other(e.static_vectors.data() + static_cast<int64_t>(t) * d,
                                 static_cast<size_t>(d));
    moves.push_back({e.tokens[t], cosine(static_vec, other), cosine(context_vec, other)});
  }
  std::sort(moves.begin(), moves.end(), [](const move& a, const move& b) {
    return a.after - a.before > b.after - b.before;
  });
  if (!moves.empty()) {
    out += fmt::format("\n  \"{}\" moved toward the words of its text (cosine with each word):\n", word);
    out += fmt::format("  {:<16} {:>8} {:>11} {:>8}\n", "word", "static", "contextual", "change");
    for (const auto& m : moves)
      out += fmt::format("  {:<16} {:>8.4f} {:>11.4f} {:>+8.4f}\n", m.token, m.before, m.after,
                         m.after - m.before);
  }
  write_output("-", out);
}

}  // namespace

void add_neighbors_command(CLI::App& app) {
  auto args = std::make_shared<neighbors_args>();
  CLI::App* sub = app.add_subcommand(
      "neighbors", "Nearest words to W's static vector and to its contextual vector in TEXT");
  sub->alias("neighbours");
  sub->add_option("--vectors", args->vectors_path, "Word vectors (default: the embedded GloVe)");
  sub->add_option("--top", args->top, "How many neighbours (default 10)")
      ->check(CLI::Range(int64_t{1}, int64_t{1000}));
  sub->add_option("--word", args->word, "The word to follow")->required();
  sub->add_option("--scale", args->scale, "Score scale: sqrt (1/√d, default), none, or a number");
  sub->add_option("text", args->text, "The text; read from standard input when absent or -");
  sub->callback([args] { run(*args); });
}

}  // namespace attn::cli
