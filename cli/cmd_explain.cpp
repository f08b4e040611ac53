// attn explain: the seeds' walkthrough for one sentence, every matrix labelled by its tokens.
#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <memory>

#include "attn/embed.hpp"
#include "attn/explain.hpp"
#include "attn/heatmap.hpp"
#include "cli_common.hpp"
#include "file_roles.hpp"

namespace attn::cli {

namespace {

struct explain_args {
  std::string vectors_path, scale = "sqrt", output = "-", color = "auto";
  int width = 100, precision = 4;
  bool html = false;
  std::vector<std::string> text;
};

// Colour only for a person at a terminal: never into a file or a pipe, and never when NO_COLOR
// is set (to any value) or the terminal is dumb, unless --color always.
bool use_color(const explain_args& args) {
  if (args.color != "auto") return args.color == "always";
  const char* term = std::getenv("TERM");
  return args.output == "-" && stdout_is_terminal() && std::getenv("NO_COLOR") == nullptr &&
         !(term && std::strcmp(term, "dumb") == 0);
}

void run(const explain_args& args) {
  vectors vocab = load_vectors(args.vectors_path);
  embedding e = embed(check_picture_length(read_text(args.text), "explain"), vocab,
                      {scale_spec::parse(args.scale), false});
  if (!e.unknown.empty())
    warn(fmt::format("left out of attention, not in the vectors: {}", fmt::join(e.unknown, " ")));
  if (args.html)
    write_output(args.output, render_heatmap_html(explain_page(e, vocab.source())));
  else
    write_output(args.output, render_explain(e, {args.width, args.precision, use_color(args)}));
}

}  // namespace

void add_explain_command(CLI::App& app) {
  auto args = std::make_shared<explain_args>();
  CLI::App* sub = app.add_subcommand(
      "explain", "Show every step of self-attention on TEXT: E, S = E·Eᵀ, scaled S, A, C = A·E");
  reads(sub->add_option("--vectors", args->vectors_path, "Word vectors (default: the embedded GloVe)"));
  sub->add_option("--scale", args->scale, "Score scale: sqrt (1/√d, default), none, or a number");
  sub->add_option("--width", args->width, "Columns to fit the matrices in")
      ->check(CLI::Range(40, 10000));
  sub->add_option("--precision", args->precision, "Decimals shown")->check(CLI::Range(0, 9));
  sub->add_option("--color", args->color, "Colour A's cells: auto (on a terminal), always, never")
      ->check(CLI::IsMember({"auto", "always", "never"}));
  sub->add_flag("--html", args->html,
                "Write the walkthrough as a self-contained HTML page (heatmap, head view, tables)");
  writes(sub->add_option("-o,--output", args->output, "Output file (default: standard output)"));
  sub->add_option("text", args->text, "The text; read from standard input when absent or -");
  sub->callback([args, sub] {
    check_file_roles(*sub);
    run(*args);
  });
}

}  // namespace attn::cli
