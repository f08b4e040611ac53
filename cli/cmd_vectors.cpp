// attn vectors: convert word vectors to attn's mmap-able .attnvec format; show what a file holds.
#include <fmt/format.h>

#include <memory>

#include "cli_common.hpp"
#include "file_roles.hpp"

namespace attn::cli {

namespace {

struct convert_args {
  std::string input, output, dtype = "f32";
  int64_t top = 0;
};

const char* format_name(vectors_format f) {
  switch (f) {
    case vectors_format::attnvec: return "attnvec";
    case vectors_format::word2vec_binary: return "word2vec binary";
    case vectors_format::word2vec_text: return "word2vec/fastText text";
    case vectors_format::glove_text: return "GloVe text";
  }
  return "unknown";
}

void convert(const convert_args& args) {
  vectors v = load_vectors(args.input);
  write_output(args.output, v.encode_attnvec(args.top, args.dtype == "f16"));
  const int64_t kept = args.top > 0 ? std::min(args.top, v.size()) : v.size();
  fmt::print(stderr, "{}: {} words × {} ({}) → {}\n", args.input, kept, v.dim(), args.dtype,
             args.output);
}

void info(const std::string& path) {
  vectors v = load_vectors(path);
  fmt::print("{}: {}, {} words × {} dims\n", v.source(), format_name(v.format()), v.size(), v.dim());
  std::string first;
  for (int64_t i = 0; i < std::min<int64_t>(v.size(), 10); ++i)
    first += (i ? " " : "") + std::string(v.word(i));
  fmt::print("first words: {}\n", first);
}

}  // namespace

void add_vectors_command(CLI::App& app) {
  CLI::App* sub = app.add_subcommand("vectors", "Word-vector files: convert, info");
  sub->require_subcommand(1);

  auto args = std::make_shared<convert_args>();
  CLI::App* conv = sub->add_subcommand(
      "convert", "Convert GloVe / word2vec / fastText vectors to .attnvec (loads with mmap)");
  reads(conv->add_option("IN", args->input,
                        "Input vectors (any supported format; \"default\" for the embedded one)"))
      ->required();
  writes(conv->add_option("OUT", args->output, "Output .attnvec"))->required();
  conv->add_option("--top", args->top, "Keep only the first N words (files list them by frequency)")
      ->check(non_negative_number);
  conv->add_option("--dtype", args->dtype, "Stored as f32 (default, exact) or f16 (half the size)")
      ->check(CLI::IsMember({"f32", "f16"}));
  conv->callback([args, conv] {
    check_file_roles(*conv);
    convert(*args);
  });

  auto path = std::make_shared<std::string>();
  CLI::App* show = sub->add_subcommand("info", "Format, size and first words of a vectors file");
  show->add_option("PATH", *path, "Vectors file (\"default\" for the embedded one)")->required();
  show->callback([path] { info(*path); });
}

}  // namespace attn::cli
