// attn heatmap: a picture of who attends to whom in TEXT, as SVG or as a self-contained HTML page
// (chosen by the extension of -o).
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <memory>
#include <optional>
#include <sstream>

#include "attn/embed.hpp"
#include "attn/error.hpp"
#include "attn/heatmap.hpp"
#include "attn/inspection.hpp"
#include "attn/text_model.hpp"
#include "attn/training_curve.hpp"
#include "attn/translation_model.hpp"
#include "cli_common.hpp"
#include "file_roles.hpp"

namespace attn::cli {

namespace {

struct heatmap_args {
  std::string vectors_path, model_path, scale = "sqrt", head = "all", layer = "all", output;
  std::vector<std::string> text;
};

enum class picture_format { svg, png, html };

picture_format format_of(const std::string& path) {
  if (has_extension(path, ".svg")) return picture_format::svg;
  if (has_extension(path, ".png")) return picture_format::png;
  if (has_extension(path, ".html") || has_extension(path, ".htm")) return picture_format::html;
  throw error(error_kind::usage, path, "cannot tell the format from the extension",
              "-o takes a .svg, .png or .html file");
}

// "all" keeps every head (layer); a number keeps that one (counted from 0, as in [B, H, L, S]).
std::optional<int> parse_number(const char* option, const std::string& text) {
  if (text == "all") return std::nullopt;
  int value = -1;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < 0)
    throw_usage(fmt::format("{} takes 'all' or a number from 0, got '{}'", option, text));
  return value;
}

// A usage error unless the chosen layer or head (when one is) is below count: "--head 4 is out of
// range: the model has 4 heads (0 … 3)". what: "head", "layer", "decoder layer".
void check_chosen(const char* option, std::optional<int> chosen, int64_t count, const char* what) {
  if (chosen && *chosen >= count)
    throw_usage(fmt::format("{} {} is out of range: the model has {} {}{} (0 … {})", option, *chosen, count, what,
                            count == 1 ? "" : "s", count - 1));
}

// Basic self-attention on word vectors: one head, with the walkthrough (E, S, scaled S, A, C)
// as tables under it.
heatmap_page vectors_page(const heatmap_args& args, const scale_spec& scale) {
  vectors vocab = load_vectors(args.vectors_path);
  embedding e = embed(check_picture_length(read_text(args.text), "heatmap"), vocab, {scale, false});
  if (!e.unknown.empty())
    warn(fmt::format("left out of attention, not in the vectors: {}", fmt::join(e.unknown, " ")));
  return explain_page(e, vocab.source());
}

// A trained model's attention: one panel per head of each layer (or of the --layer asked for),
// as the model computes it when it predicts; --head keeps that head of each layer.
heatmap_page model_page(const heatmap_args& args, std::optional<int> head, bool for_page) {
  const text_model model = text_model::load(args.model_path);
  const std::string text = read_text(args.text);
  check_picture_length(text, "heatmap");
  const int64_t layers = attention_layers(model.config());
  const std::optional<int> chosen = parse_number("--layer", args.layer);
  check_chosen("--layer", chosen, layers, "layer");
  // The page shows each layer's predictions; an SVG or PNG draws the weights alone.
  model_inspection x = model.inspect(text, for_page ? 5 : 0);
  warn_when_cut(model, text);
  // A language model reads a word it does not know as <unk>; the others leave it out.
  const bool as_unk = kind_of(model.config().task).reads_unknown;
  if (!x.unknown.empty())
    warn(fmt::format("{}, not known to the model: {}", as_unk ? "read as <unk>" : "left out of attention",
                     fmt::join(x.unknown, " ")));
  const text_model_config& c = model.config();
  heatmap_page page;
  page.map.title = fmt::format("Attention of each head of {}: how much each token (row) attends "
                               "to each token (column)",
                               args.model_path);
  page.map.queries = x.tokens;
  page.map.keys = x.tokens;
  const int64_t heads = x.layers.front().weights.dim(0), n = x.layers.front().weights.dim(1);
  check_chosen("--head", head, heads, "head");
  for (int64_t layer = 0; layer < layers; ++layer) {
    if (chosen && *chosen != layer) continue;
    const tensor& w = x.layers[static_cast<size_t>(layer)].weights;
    for (int64_t h = 0; h < heads; ++h) {
      if (head && *head != h) continue;
      page.map.heads.push_back({layers == 1 ? fmt::format("head {}", h) : fmt::format("layer {} head {}", layer, h),
                                w.slice(0, h, h + 1).contiguous().reshape({n, n})});
    }
  }
  // The page holds every layer and head and opens on the ones asked for.
  page.initial_layer = chosen ? *chosen : static_cast<int>(layers - 1);
  page.initial_head = head ? *head : 0;
  const std::vector<std::string> unknown = x.unknown, tokens = x.tokens;
  page.inspection = std::move(x);
  if (const training_history history = model.history(); !history.empty())
    page.training_curve = render_training_curve_svg(history, args.model_path);
  page.notes.push_back(fmt::format("Tokens ({}): {}", n, fmt::join(tokens, " ")));
  if (!unknown.empty())
    page.notes.push_back(fmt::format("{}, not known to the model: {}", as_unk ? "Read as <unk>" : "Left out",
                                     fmt::join(unknown, " ")));
  page.notes.push_back(fmt::format(
      "Model: {} ({} task, {} head{} of {} dimensions, scale 1/√{}{})", args.model_path,
      task_name(c.task), heads, heads == 1 ? "" : "s", c.dim / heads, c.dim / heads,
      kind_of(c.task).causal
          ? "; causal: each token sees only itself and those before"
          : ""));
  if (layers > 1) page.notes.push_back(fmt::format("Layers: {}, first to last", layers));
  return page;
}

// A translator's attention while it writes its translation (beam 5): the cross-attention of every
// layer and head as the heatmap (written target pieces × source pieces), each layer's encoder and
// decoder self-attention (heads averaged) as tables under it, and the word alignment drawn as links.
heatmap_page translation_page(const heatmap_args& args, std::optional<int> head) {
  const translation_model model = translation_model::load(args.model_path);
  const std::string text = check_picture_length(read_text(args.text), "heatmap");
  const translation_attention a = model.attention(text, {.beam = 5});
  const auto layers = static_cast<int64_t>(a.cross.size());
  const int64_t heads = a.cross.front().dim(0);
  const std::optional<int> chosen = parse_number("--layer", args.layer);
  check_chosen("--layer", chosen, layers, "decoder layer");
  check_chosen("--head", head, heads, "head");
  heatmap_page page;
  page.map.title = fmt::format("Cross-attention of {}: how much each target piece it wrote (row) attended to each "
                               "source piece (column)",
                               args.model_path);
  page.map.queries = a.target;
  page.map.keys = a.source;
  const auto rows = static_cast<int64_t>(a.target.size()), cols = static_cast<int64_t>(a.source.size());
  for (int64_t layer = 0; layer < layers; ++layer) {
    if (chosen && *chosen != layer) continue;
    for (int64_t h = 0; h < heads; ++h) {
      if (head && *head != h) continue;
      page.map.heads.push_back({fmt::format("cross layer {} head {}", layer, h),
                                a.cross[static_cast<size_t>(layer)].slice(0, h, h + 1).contiguous().reshape({rows, cols})});
    }
  }
  const auto mean_of_heads = [](const tensor& w) {
    const int64_t h = w.dim(0), r = w.dim(1), c = w.dim(2);
    tensor m({r, c});
    for (int64_t i = 0; i < r; ++i)
      for (int64_t j = 0; j < c; ++j) {
        double sum = 0;
        for (int64_t k = 0; k < h; ++k) sum += w.at({k, i, j});
        m.at({i, j}) = static_cast<float>(sum / static_cast<double>(h));
      }
    return m;
  };
  page.notes.push_back(fmt::format("Source pieces ({}): {}", cols, fmt::join(a.source, " ")));
  page.notes.push_back(fmt::format("Translation (beam 5): {}", a.text));
  std::string links;
  for (const auto& [i, j] : a.alignment) links += fmt::format("{}{}-{}", links.empty() ? "" : " ", i, j);
  page.notes.push_back(fmt::format("Alignment (source word-target word, from the last layer's cross-attention): {}",
                                   links.empty() ? "none" : links));
  const translation_config& c = model.config();
  page.notes.push_back(fmt::format("Model: {} (translator, {} encoder and {} decoder layers, {} heads of {} dimensions)",
                                   args.model_path, c.encoder_layers, c.decoder_layers, c.heads, c.width / c.heads));
  // The alignment drawn as links between the words (split at spaces, as the links count them).
  const auto words_of = [](const std::string& line) {
    std::vector<std::string> words;
    std::istringstream in(line);
    for (std::string w; in >> w;) words.push_back(w);
    return words;
  };
  const std::vector<std::string> source_words = words_of(text), target_words = words_of(a.text);
  if (!source_words.empty() && !target_words.empty())
    page.alignment = render_alignment_svg(source_words, target_words, a.alignment);
  for (int64_t layer = 0; layer < layers; ++layer) {
    const auto l = static_cast<size_t>(layer);
    if (l < a.encoder.size())
      page.tables.push_back({fmt::format("Encoder layer {} self-attention (heads averaged)", layer),
                             mean_of_heads(a.encoder[l]), a.source, a.source, false, true});
    page.tables.push_back({fmt::format("Decoder layer {} self-attention, causal (heads averaged; row: the piece "
                                       "written, column: the piece read)",
                                       layer),
                           mean_of_heads(a.decoder[l]), a.target, a.read, false, true});
  }
  for (size_t l = a.cross.size(); l < a.encoder.size(); ++l)
    page.tables.push_back({fmt::format("Encoder layer {} self-attention (heads averaged)", l),
                           mean_of_heads(a.encoder[l]), a.source, a.source, false, true});
  return page;
}

void run(const heatmap_args& args) {
  // The cheap checks first, before the vectors or the model are loaded.
  const picture_format format = format_of(args.output);
  const std::optional<int> head = parse_number("--head", args.head);
  parse_number("--layer", args.layer);
  const scale_spec scale = scale_spec::parse(args.scale);

  const bool translator = !args.model_path.empty() && args.model_path != "builtin" && args.model_path != "builtin-lm" &&
                          is_translation_model_file(args.model_path);
  heatmap_page page = args.model_path.empty() ? vectors_page(args, scale)
                      : translator             ? translation_page(args, head)
                                               : model_page(args, head, format == picture_format::html);
  if (head && args.model_path.empty()) page.map = select_head(page.map, *head);
  write_output(args.output, format == picture_format::svg   ? render_heatmap_svg(page.map)
                            : format == picture_format::png ? render_heatmap_png(page.map)
                                                            : render_heatmap_html(page));
}

}  // namespace

void add_heatmap_command(CLI::App& app) {
  auto args = std::make_shared<heatmap_args>();
  CLI::App* sub = app.add_subcommand(
      "heatmap", "Draw who attends to whom in TEXT: an SVG or PNG heatmap, or a self-contained HTML "
                 "page that looks inside the model (every layer and head, the query·key arithmetic, "
                 "predictions per layer, exports), by the extension of -o");
  CLI::Option* vectors =
      reads(sub->add_option("--vectors", args->vectors_path, "Word vectors (default: the embedded GloVe)"));
  CLI::Option* model = reads(sub->add_option(
      "--model", args->model_path,
      "A model trained by attn train: draw its attention, one panel per head"));
  sub->add_option("--head", args->head, "Which head to draw: all (default) or its number from 0");
  CLI::Option* layer = sub->add_option(
      "--layer", args->layer, "A model's layer to draw: all (default: one row of panels per layer) or its number from 0");
  layer->needs(model);
  CLI::Option* scale = sub->add_option(
      "--scale", args->scale, "Score scale for word vectors: sqrt (1/√d, default), none, or a number");
  model->excludes(vectors);
  model->excludes(scale);
  writes(sub->add_option("-o,--output", args->output, "Output file: FILE.svg, FILE.png or FILE.html"))->required();
  sub->add_option("text", args->text, "The text; read from standard input when absent or -");
  sub->callback([args, sub] {
    check_file_roles(*sub);
    run(*args);
  });
}

}  // namespace attn::cli
