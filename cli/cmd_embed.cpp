// attn embed: contextual embeddings of a text by basic self-attention (C = softmax(E·Eᵀ·s)·E),
// or with --model those of a trained model (its last attention block's output per token), of
// one text or of every line of a file with --batch (see embed_batch.hpp).
#include <fmt/format.h>

#include <filesystem>
#include <memory>
#include <optional>

#include "attn/embed.hpp"
#include "attn/error.hpp"
#include "attn/npy.hpp"
#include "attn/text_model.hpp"
#include "cli_common.hpp"
#include "file_roles.hpp"
#include "embed_batch.hpp"
#include "embed_records.hpp"

namespace attn::cli {

namespace {

struct embed_args {
  std::string vectors_path, model_path, scale = "sqrt", format, output = "-", batch, pool;
  bool strict = false, hide_token = false, normalize = false;
  std::optional<int64_t> layer;  // --layer: the encoder layer read (default: the last)
  std::vector<std::string> text;
  batch_loop loop;  // empty: the one-process loop
};

// --format when given; otherwise from the extension of -o (.json/.jsonl/.ndjson, .csv, .npy),
// and text for anything else or standard output.
std::string output_format(const embed_args& args) {
  if (!args.format.empty()) return args.format;
  if (args.output == "-") return "text";
  std::string ext = std::filesystem::path(args.output).extension().string();
  for (char& ch : ext) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (ext == ".json" || ext == ".jsonl" || ext == ".ndjson") return "json";
  if (ext == ".csv") return "csv";
  if (ext == ".npy") return "npy";
  return "text";
}

// The bytes of one text's result; the embedding's kind picks the JSON keys.
template <class Embedding, class Json>
std::string single_output(const std::string& format, const embed_args& args, const Embedding& e,
                          const tensor& rows, int64_t dim, const Json& json) {
  if (format == "json") return json().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  if (format == "csv") return embed_csv_header(dim, /*with_line=*/false) + embed_csv_rows(e);
  if (format == "npy") {
    if (args.output == "-" && stdout_is_terminal())
      throw_usage("--format npy writes binary: give -o FILE or redirect standard output");
    return encode_npy(rows);
  }
  return embed_text(e);
}

// One text's sentence vector (--pool) in the chosen format; json() gives the source's keys.
template <class Json>
std::string single_sentence(const std::string& format, const embed_args& args, const std::vector<float>& v,
                            int64_t dim, const Json& json) {
  if (format == "json") return json().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  if (format == "csv") return sentence_csv_header(dim, /*with_line=*/false) + sentence_csv_row(v, dim);
  if (format == "npy") {
    if (args.output == "-" && stdout_is_terminal())
      throw_usage("--format npy writes binary: give -o FILE or redirect standard output");
    return encode_npy(tensor({dim}, std::vector<float>(v)));
  }
  return sentence_text(v);
}

// A trained model's contextual embeddings: the output of its last attention block per token.
void run_model(const embed_args& args, const std::string& format, const sentence_choice& sentence) {
  const text_model model = text_model::load(args.model_path);
  const token_reading reading = args.hide_token ? token_reading::hidden : token_reading::visible;
  if (reading == token_reading::hidden && !kind_of(model.config().task).hides_words)
    throw_usage(fmt::format("--hide-token reads each place with its word masked: the model {} is "
                            "{}, not masked-word", args.model_path, task_name(model.config().task)));
  const int64_t layers = attention_layers(model.config());
  if (args.layer && *args.layer >= layers)
    throw_usage(fmt::format("--layer {} is out of range: the model {} has {} layer{} (0 … {})", *args.layer,
                            args.model_path, layers, layers == 1 ? "" : "s", layers - 1));
  const int64_t layer = args.layer.value_or(-1);
  if (!args.batch.empty()) {
    run_model_embed_batch(args.batch, args.output, format, model, args.model_path, args.strict,
                          {reading, layer, sentence}, args.loop);
    return;
  }
  const std::string text = read_text(args.text);
  const contextual_embedding e = model.embed(text, reading, layer);
  warn_when_cut(model, text);
  if (!e.unknown.empty()) {
    if (args.strict)
      throw_usage(fmt::format("unknown token '{}' (not known to the model {}); drop --strict to "
                              "leave unknown tokens out",
                              e.unknown.front(), args.model_path));
    warn(fmt::format("{}, not known to the model: {}",
                     kind_of(model.config().task).reads_unknown ? "read as <unk>" : "left out of attention",
                     fmt::join(e.unknown, " ")));
  }
  const int64_t dim = model.config().dim;
  if (sentence.pool) {
    const std::vector<float> v = sentence.of(e.embeddings);
    write_output(args.output, single_sentence(format, args, v, dim, [&] {
                   nlohmann::json j = sentence_json(e.tokens, e.unknown, v, sentence);
                   j["model"] = args.model_path;
                   j["dim"] = dim;
                   return j;
                 }));
    return;
  }
  write_output(args.output, single_output(format, args, e, e.embeddings, dim, [&] {
                 return embed_json(e, args.model_path, dim);
               }));
}

void run(const embed_args& args) {
  const std::string format = output_format(args);
  // The cheap checks first, before the vectors or the model are loaded.
  sentence_choice sentence;
  if (!args.pool.empty()) sentence.pool = parse_sentence_pool(args.pool);
  sentence.normalize = args.normalize;
  if (args.normalize && !sentence.pool)
    throw_usage("--normalize scales sentence vectors: give --pool mean|max|cls|last with it");
  if (args.hide_token && args.model_path.empty())
    throw_usage("--hide-token is for a masked-word model: give --model (e.g. --model builtin)");
  if (args.layer && args.model_path.empty())
    throw_usage("--layer reads a trained model's layer: give --model (e.g. --model builtin)");
  if (!args.batch.empty()) {
    if (!args.text.empty())
      throw_usage("--batch reads the sentences from its file; give no TEXT with it");
    // One .npy holds one array, and each sentence has its own number of tokens (sentence
    // vectors all have one width: they make one array [lines, d]).
    if (format == "npy" && !sentence.pool)
      throw_usage("--format npy holds a single array; with --batch use json (JSON Lines), csv "
                  "or text, or give --pool for one vector per line");
  }
  if (!args.model_path.empty()) {
    run_model(args, format, sentence);
    return;
  }
  embed_options options{scale_spec::parse(args.scale), args.strict};
  // Only JSON prints A (N × N); the other formats stream C through the fused kernel, so their
  // memory stays linear in the text's length.
  options.keep_steps = format == "json" && !sentence.pool;
  const vectors vocab = load_vectors(args.vectors_path);
  if (!args.batch.empty()) {
    run_embed_batch(args.batch, args.output, format, vocab, options, sentence, args.loop);
    return;
  }

  embedding e = embed(read_text(args.text), vocab, options);
  if (!e.unknown.empty())
    warn(fmt::format("left out of attention, not in the vectors: {}", fmt::join(e.unknown, " ")));
  if (sentence.pool) {
    const std::vector<float> v = sentence.of(e.steps.context);
    write_output(args.output, single_sentence(format, args, v, vocab.dim(), [&] {
                   nlohmann::json j = sentence_json(e.tokens, e.unknown, v, sentence);
                   j["scale"] = e.steps.scale;
                   j["vectors"] = vocab.source();
                   return j;
                 }));
    return;
  }
  write_output(args.output, single_output(format, args, e, e.steps.context, vocab.dim(),
                                          [&] { return embed_json(e, vocab); }));
}

}  // namespace

void add_embed_command(CLI::App& app) { add_embed_command(app, {}); }

void add_embed_command(CLI::App& app, const batch_loop& loop) {
  auto args = std::make_shared<embed_args>();
  args->loop = loop;
  CLI::App* sub = app.add_subcommand(
      "embed", "Contextual embeddings of TEXT by basic self-attention over static word vectors, "
               "or by a trained model (--model)");
  CLI::Option* vectors = reads(sub->add_option(
      "--vectors", args->vectors_path,
      "Word vectors (GloVe, word2vec, fastText .vec, .attnvec); default: the embedded GloVe 6B "
      "100d, 50k words"));
  CLI::Option* model = reads(sub->add_option(
      "--model", args->model_path,
      "A model trained by attn train: its contextual embeddings instead, the output of its last "
      "attention block per token (width --dim, before pooling; causal for next-word models)"));
  CLI::Option* scale =
      sub->add_option("--scale", args->scale, "Score scale: sqrt (1/√d, default), none, or a number");
  model->excludes(vectors);
  model->excludes(scale);
  sub->add_option("--format", args->format,
                  "Output: text (token v1 … vd per line), json, csv (token,d0,…), npy; default: "
                  "from the extension of -o (.json .jsonl .csv .npy), else text")
      ->check(CLI::IsMember({"text", "json", "npy", "csv"}));
  writes(sub->add_option("-o,--output", args->output, "Output file (default: standard output)"));
  add_threads_option(sub);
  reads(sub->add_option("--batch", args->batch,
                  "Embed every line of FILE (- for standard input), one record per line: JSON "
                  "Lines, CSV with a line column, or text records each ended by a blank line"))
      ->type_name("FILE");
  sub->add_flag("--strict", args->strict, "Unknown tokens are an error instead of left out");
  sub->add_option("--pool", args->pool,
                  "One vector per text instead of a row per token: mean (of the token rows, "
                  "sentence-transformers' default), max, cls (the first token's row) or last")
      ->type_name("mean|max|cls|last");
  sub->add_flag("--normalize", args->normalize, "With --pool: scale each vector to unit length");
  sub->add_flag("--hide-token", args->hide_token,
                "A masked-word model (--model builtin): read each token with itself replaced by "
                "the mask (what the context says belongs there; one pass per token) instead of "
                "with itself present");
  sub->add_option("--layer", args->layer,
                  "With --model: read encoder layer N's output (0 … layers − 1) instead of the last "
                  "(an inner layer's residual stream, as Hugging Face's hidden_states give it)")
      ->type_name("N")
      ->check(non_negative_number);
  sub->add_option("text", args->text, "The text; read from standard input when absent or -");
  sub->callback([args, sub] {
    check_file_roles(*sub);
    run(*args);
  });
}

}  // namespace attn::cli
