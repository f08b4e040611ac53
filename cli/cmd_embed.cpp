// attn embed: contextual embeddings of a text by basic self-attention (C = softmax(E·Eᵀ·s)·E).
#include <fmt/format.h>

#include <memory>
#include <nlohmann/json.hpp>

#include "attn/embed.hpp"
#include "attn/error.hpp"
#include "cli_common.hpp"
#include "json_util.hpp"

namespace attn::cli {

namespace {

struct embed_args {
  std::string vectors_path, scale = "sqrt", format = "text", output = "-";
  bool strict = false;
  std::vector<std::string> text;
};

// GloVe's own text format: "token v1 … vd", so the output loads again as word vectors.
std::string as_text(const embedding& e) {
  std::string out;
  const tensor& c = e.steps.context;
  const int64_t d = c.dim(1);
  for (size_t i = 0; i < e.tokens.size(); ++i) {
    out += e.tokens[i];
    for (int64_t j = 0; j < d; ++j)
      out += fmt::format(" {:.6f}", c.data()[static_cast<int64_t>(i) * d + j]);
    out += '\n';
  }
  return out;
}

std::string as_json(const embedding& e, const vectors& vocab) {
  nlohmann::json j;
  j["tokens"] = e.tokens;
  j["embeddings"] = json_matrix(e.steps.context);
  j["attention"] = json_matrix(e.steps.weights);
  j["unknown"] = e.unknown;
  j["scale"] = e.steps.scale;
  j["vectors"] = vocab.source();
  return j.dump() + "\n";
}

void run(const embed_args& args) {
  vectors vocab = load_vectors(args.vectors_path);
  embed_options options{scale_spec::parse(args.scale), args.strict};
  embedding e = embed(read_text(args.text), vocab, options);
  if (!e.unknown.empty())
    warn(fmt::format("left out of attention, not in the vectors: {}", fmt::join(e.unknown, " ")));

  std::string bytes;
  if (args.format == "json") {
    bytes = as_json(e, vocab);
  } else if (args.format == "npy") {
    if (args.output == "-" && stdout_is_terminal())
      throw_usage("--format npy writes binary: give -o FILE or redirect standard output");
    bytes = encode_npy(e.steps.context);
  } else {
    bytes = as_text(e);
  }
  write_output(args.output, bytes);
}

}  // namespace

void add_embed_command(CLI::App& app) {
  auto args = std::make_shared<embed_args>();
  CLI::App* sub = app.add_subcommand(
      "embed", "Contextual embeddings of TEXT by basic self-attention over static word vectors");
  sub->add_option("--vectors", args->vectors_path,
                  "Word vectors (GloVe, word2vec, fastText .vec, .attnvec); default: the embedded "
                  "GloVe 6B 100d, 50k words");
  sub->add_option("--scale", args->scale, "Score scale: sqrt (1/√d, default), none, or a number");
  sub->add_option("--format", args->format, "Output: text (token v1 … vd per line), json, npy")
      ->check(CLI::IsMember({"text", "json", "npy"}));
  sub->add_option("-o,--output", args->output, "Output file (default: standard output)");
  sub->add_flag("--strict", args->strict, "Unknown tokens are an error instead of left out");
  sub->add_option("text", args->text, "The text; read from standard input when absent or -");
  sub->callback([args] { run(*args); });
}

}  // namespace attn::cli
