// attn neighbors: the vocabulary words nearest to a word's static vector and to its contextual
// vector in a text, side by side, and how far the word moved toward each word of the text.
// With --model, a trained model's vectors take the static ones' place: each input word run
// alone through the model, against the word's contextual vector in the text. A masked-word
// model (the built-in one) instead stands in one table beside the static vector and the
// parameter-free attention, with the words its output layer reads at the word's place.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <set>

#include "attn/embed.hpp"
#include "attn/error.hpp"
#include "attn/text_model.hpp"
#include "attn/tokenizer.hpp"
#include "cli_common.hpp"
#include "file_roles.hpp"

namespace attn::cli {

namespace {

struct neighbors_args {
  std::string vectors_path, model_path, scale = "sqrt", word;
  int64_t top = 10;
  bool hide_token = false;
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

std::string single_word(const std::string& word) {
  auto word_tokens = tokenize(word);
  if (word_tokens.size() != 1) throw_usage("--word must be a single word, got '" + word + "'");
  return word_tokens.front();
}

// The word's vector before attention (`before`: static, or alone through the model) and after
// it (`after`: in the text), each against the same reference vectors `vocab`.
struct followed_word {
  std::string word, before_name, after_name;
  std::span<const float> before, after;
  int64_t self;  // the word's row in vocab, or -1 (a number read as the shared number vector)
};

// The two neighbour lists side by side, then the word's cosine with each other word of the
// text (as `reference` gives its vector) before and after attention, largest gain first.
std::string neighbours_and_moves(const followed_word& w, const vectors& vocab, int64_t top,
                                 const std::vector<std::string>& tokens,
                                 const std::function<std::span<const float>(size_t)>& reference,
                                 const std::string& reference_note) {
  std::string out;
  auto before = nearest_others(vocab, w.before, top, w.self);
  auto after = nearest_others(vocab, w.after, top, w.self);
  const std::string left_title = fmt::format("{} \"{}\"", w.before_name, w.word);
  const std::string right_title = fmt::format("{} \"{}\"", w.after_name, w.word);
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
  std::set<std::string> seen{w.word};
  for (size_t t = 0; t < tokens.size(); ++t) {
    if (!seen.insert(tokens[t]).second) continue;
    moves.push_back({tokens[t], cosine(w.before, reference(t)), cosine(w.after, reference(t))});
  }
  std::sort(moves.begin(), moves.end(), [](const move& a, const move& b) {
    return a.after - a.before > b.after - b.before;
  });
  if (!moves.empty()) {
    out += fmt::format("\n  \"{}\" moved toward the words of its text (cosine with each {}):\n",
                       w.word, reference_note);
    out += fmt::format("  {:<16} {:>8} {:>11} {:>8}\n", "word", w.before_name, w.after_name,
                       "change");
    for (const auto& m : moves)
      out += fmt::format("  {:<16} {:>8.4f} {:>11.4f} {:>+8.4f}\n", m.token, m.before, m.after,
                         m.after - m.before);
  }
  return out;
}

void run_vectors(const neighbors_args& args) {
  vectors vocab = load_vectors(args.vectors_path);
  const std::string text = read_text(args.text);
  embedding e = embed(text, vocab, {scale_spec::parse(args.scale), false});

  const std::string word = single_word(args.word);
  auto position = std::find(e.tokens.begin(), e.tokens.end(), word);
  if (position == e.tokens.end()) {
    bool unknown = std::find(e.unknown.begin(), e.unknown.end(), word) != e.unknown.end();
    throw_usage(unknown ? fmt::format("'{}' is not in the vectors of {}", word, vocab.source())
                        : fmt::format("'{}' is not a token of the text", word));
  }
  const int64_t row = position - e.tokens.begin(), d = vocab.dim();
  const followed_word w{
      word, "static", "contextual",
      std::span<const float>(e.static_vectors.data() + row * d, static_cast<size_t>(d)),
      std::span<const float>(e.steps.context.data() + row * d, static_cast<size_t>(d)),
      vocab.find(word).value_or(-1)};  // -1: a number read as the shared number vector

  std::string out = fmt::format("\"{}\" in: {}\n", word, fmt::join(e.tokens, " "));
  if (!e.unknown.empty()) out += fmt::format("left out (not in the vectors): {}\n", fmt::join(e.unknown, " "));
  out += fmt::format("vectors: {} ({} words, {} dims); scale {:.6g}; cosine similarity\n\n",
                     vocab.source(), vocab.size(), d, e.steps.scale);
  out += neighbours_and_moves(w, vocab, args.top, e.tokens, [&](size_t t) {
    return std::span<const float>(e.static_vectors.data() + static_cast<int64_t>(t) * d,
                                  static_cast<size_t>(d));
  }, "word");
  write_output("-", out);
}

// A trained model: W's contextual vector in the text (its last attention block's output)
// against every input word of the model run alone through it (a one-token text each).
void run_model(const neighbors_args& args) {
  const text_model model = text_model::load(args.model_path);  // (loaded again: it is small)
  const std::string text = read_text(args.text);
  const std::string word = single_word(args.word);
  const contextual_embedding e = model.embed(text);
  warn_when_cut(model, text);
  auto position = std::find(e.tokens.begin(), e.tokens.end(), word);
  if (position == e.tokens.end())
    throw_usage(!model.knows(word)
                    ? fmt::format("'{}' is not known to the model {}", word, args.model_path)
                    : fmt::format("'{}' is not a token of the text the model reads", word));
  const vectors alone = model.embed_vocabulary();
  const text_model_config& c = model.config();
  const int64_t row = position - e.tokens.begin(), d = c.dim;
  const int64_t self = *alone.find(word);
  const followed_word w{word, "alone", "contextual", alone.vector(self),
                        std::span<const float>(e.embeddings.data() + row * d, static_cast<size_t>(d)),
                        self};

  std::string out = fmt::format("\"{}\" in: {}\n", word, fmt::join(e.tokens, " "));
  if (!e.unknown.empty())
    out += fmt::format("{} (not known to the model): {}\n", kind_of(c.task).reads_unknown ? "read as <unk>" : "left out",
                       fmt::join(e.unknown, " "));
  out += fmt::format(
      "model: {} ({}, {} head{}, {} dims{}); alone: each of its {} words as a one-token text; "
      "cosine similarity\n\n",
      args.model_path, task_name(c.task), c.heads, c.heads == 1 ? "" : "s", d,
      kind_of(c.task).every_prefix ? ", causal" : "", alone.size());  // (said of next-word models only)
  out += neighbours_and_moves(w, alone, args.top, e.tokens, [&](size_t t) {
    return alone.vector(*alone.find(e.tokens[t]));
  }, "word alone");
  write_output("-", out);
}

// A masked-word model: three columns — the static (default GloVe) vector's nearest words, the
// parameter-free attention's, and the words the model's output layer reads at the word's place
// (BERT's masked-LM head; hidden: what its context says belongs there). The movement table
// compares the model's reading, mapped by its output map into the space of its own word rows
// (GloVe's for a model over them, learned ones otherwise), with each word's row there.
void run_context_model(const neighbors_args& args, const text_model& model) {
  const vectors vocab = vectors::load_default();
  const vectors model_rows = model.word_rows();
  const std::string text = read_text(args.text);
  const std::string word = single_word(args.word);
  const embedding free = embed(text, vocab, {scale_spec::parse("sqrt"), false});
  const token_reading how = args.hide_token ? token_reading::hidden : token_reading::visible;
  const contextual_embedding e = model.embed(text, how);
  warn_when_cut(model, text);
  const tensor readings = model.embed_as_words(text, how);
  const auto free_at = std::find(free.tokens.begin(), free.tokens.end(), word);
  const auto model_at = std::find(e.tokens.begin(), e.tokens.end(), word);
  if (free_at == free.tokens.end() || model_at == e.tokens.end())
    throw_usage(fmt::format("'{}' is not a token of the text {}", word,
                            vocab.lookup(word) ? "" : "(nor in the default vectors)"));
  // A number without a row of its own reads as the shared number vector, and has no self.
  const int64_t d = vocab.dim(), self = vocab.find(word).value_or(-1);
  const auto row = [d](const auto& values, int64_t r) {
    return std::span<const float>(values.data() + r * d, static_cast<size_t>(d));
  };
  const std::span<const float> stat = *vocab.lookup(word);
  const std::span<const float> context = row(free.steps.context, free_at - free.tokens.begin());
  // The reading is a row of the model's own word space, whose width need not be GloVe's.
  const int64_t model_width = readings.shape().back();
  const std::span<const float> reading(readings.values().data() + (model_at - e.tokens.begin()) * model_width,
                                       static_cast<size_t>(model_width));
  const std::string name = args.model_path == "builtin" ? "builtin" : "model";

  // The model's column: the words its output layer reads at the place (its fill), the word
  // itself left out as in the other columns, and punctuation too (a sentence's last word is
  // often read as the full stop that ends most training sentences); probabilities over all its
  // output words. The list is read deep enough to fill the column with words.
  const int64_t at = model_at - e.tokens.begin();
  std::vector<scored_label> fill =
      model.read_as_words(text, args.top + 1 + 64, how)[static_cast<size_t>(at)];
  std::erase_if(fill, [&](const scored_label& x) { return x.label == word || !is_word_token(x.label); });
  if (static_cast<int64_t>(fill.size()) > args.top) fill.resize(static_cast<size_t>(args.top));

  std::string out = fmt::format("\"{}\" in: {}\n", word, fmt::join(e.tokens, " "));
  if (!e.unknown.empty()) out += fmt::format("left out (not known to the model): {}\n", fmt::join(e.unknown, " "));
  out += fmt::format("static, attention: nearest GloVe words by cosine to the word's GloVe vector and to "
                     "the parameter-free attention's output (scale 1/√d); {}: {} ({} layers) reading {}: "
                     "its likeliest words there (probability; punctuation left out)\n\n",
                     name, args.model_path, model.config().layers,
                     args.hide_token ? "the word's place with the word hidden" : "the word in its text");
  std::vector<std::vector<std::pair<std::string, double>>> lists;
  for (const std::span<const float> v : {stat, context}) {
    auto& list = lists.emplace_back();
    for (const neighbor& n : nearest_others(vocab, v, args.top, self))
      list.emplace_back(vocab.word(n.index), n.similarity);
  }
  auto& filled = lists.emplace_back();
  for (const scored_label& x : fill) filled.emplace_back(x.label, x.probability);
  for (const std::string title : {"static", "attention", name.c_str()})
    out += fmt::format("  {:<30}", fmt::format("{} \"{}\"", title, word));
  out += "\n";
  for (size_t i = 0; i < static_cast<size_t>(args.top); ++i) {
    for (const auto& list : lists)
      out += i < list.size() ? fmt::format("  {:>3}  {:<16} {:.4f}  ", i + 1, list[i].first, list[i].second)
                             : fmt::format("  {:<30}", "");
    out += "\n";
  }
  // How the word moved: its cosine with each other word's static vector, in each column.
  struct move { std::string token; double stat, attention, model; };
  std::vector<move> moves;
  std::set<std::string> seen{word};
  for (const std::string& t : free.tokens) {
    const auto own = model_rows.lookup(t);
    if (!own || !seen.insert(t).second) continue;  // (a word the model has no row for: no model cosine)
    const std::span<const float> other = *vocab.lookup(t);
    moves.push_back({t, cosine(stat, other), cosine(context, other), cosine(reading, *own)});
  }
  std::sort(moves.begin(), moves.end(), [](const move& a, const move& b) {
    return a.model - a.stat > b.model - b.stat;
  });
  out += fmt::format("\n  \"{}\" moved toward the words of its text (static, attention: cosine with each "
                     "word's static vector; {}: with the word's row in the model):\n", word, name);
  out += fmt::format("  {:<16} {:>8} {:>10} {:>8} {:>8}\n", "word", "static", "attention", name, "change");
  for (const move& m : moves)
    out += fmt::format("  {:<16} {:>8.4f} {:>10.4f} {:>8.4f} {:>+8.4f}\n", m.token, m.stat,
                       m.attention, m.model, m.model - m.stat);
  write_output("-", out);
}

void run(const neighbors_args& args) {
  if (args.model_path.empty()) {
    if (args.hide_token) throw_usage("--hide-token is for a masked-word model: give --model (e.g. --model builtin)");
    run_vectors(args);
    return;
  }
  const text_model model = text_model::load(args.model_path);
  if (args.hide_token && !kind_of(model.config().task).hides_words)
    throw_usage(fmt::format("--hide-token reads the word's place with the word masked: the model {} "
                            "is {}, not masked-word", args.model_path, task_name(model.config().task)));
  if (kind_of(model.config().task).hides_words)
    run_context_model(args, model);
  else
    run_model(args);
}

}  // namespace

void add_neighbors_command(CLI::App& app) {
  auto args = std::make_shared<neighbors_args>();
  CLI::App* sub = app.add_subcommand(
      "neighbors", "Nearest words to W's static vector and to its contextual vector in TEXT");
  sub->alias("neighbours");
  CLI::Option* vectors =
      reads(sub->add_option("--vectors", args->vectors_path, "Word vectors (default: the embedded GloVe)"));
  CLI::Option* model = reads(sub->add_option(
      "--model", args->model_path,
      "A model trained by attn train: W's contextual vector from the model against every input "
      "word of the model run alone through it; a masked-word model (builtin): the words its "
      "output layer reads at W's place, beside the static vector and the parameter-free attention"));
  sub->add_option("--top", args->top, "How many neighbours (default 10)")
      ->check(CLI::Range(int64_t{1}, int64_t{1000}));
  sub->add_option("--word", args->word, "The word to follow")->required();
  sub->add_flag("--hide-token", args->hide_token,
                "A masked-word model: read W's place with W hidden (what the context says belongs "
                "there) instead of W in its text");
  CLI::Option* scale =
      sub->add_option("--scale", args->scale, "Score scale: sqrt (1/√d, default), none, or a number");
  model->excludes(vectors);
  model->excludes(scale);
  sub->add_option("text", args->text, "The text; read from standard input when absent or -");
  sub->callback([args] { run(*args); });
}

}  // namespace attn::cli
