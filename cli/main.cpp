// attn: the command-line tool. Parses, calls the library, prints; one place maps errors to
// exit codes (0 success, 1 usage, 2 input).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <map>
#include <new>
#include <string>

#include "attn/error.hpp"
#include "cli_common.hpp"

namespace {

// One-line synopses, printed after a usage error so the fix is on screen.
const std::map<std::string, std::string> synopses = {
    {"embed",
     "attn embed [--vectors PATH] [--scale sqrt|none|NUMBER] [--format text|json|csv|npy] "
     "[-o FILE] [--strict] TEXT | --batch FILE\n       attn embed --model MODEL "
     "[--format text|json|csv|npy] [-o FILE] [--strict] TEXT | --batch FILE"},
    {"explain",
     "attn explain [--vectors PATH] [--scale sqrt|none|NUMBER] [--color auto|always|never] "
     "[--html] [-o FILE] TEXT"},
    {"heatmap",
     "attn heatmap [--vectors PATH | --model MODEL] [--head all|N] [--scale sqrt|none|NUMBER] "
     "TEXT -o FILE.svg|FILE.html"},
    {"neighbors", "attn neighbors [--vectors PATH | --model MODEL] [--top K] --word W TEXT"},
    {"mha",
     "attn mha --weights W.safetensors --heads H --query Q.npy [--key K.npy --value V.npy] "
     "[--causal] [--key-padding-mask M.npy] [--attn-mask M.npy] -o OUT.npy "
     "[--attn-weights-out AW.npy]"},
    {"sdpa",
     "attn sdpa --query Q.npy --key K.npy --value V.npy [--causal] [--scale S] "
     "[--attn-mask M.npy] [--kernel fused|reference] -o OUT.npy "
     "[--grad-output G.npy --dq DQ.npy --dk DK.npy --dv DV.npy]"},
    {"bench",
     "attn bench [--causal] [--backward] [--threads T] [--reps R] [--kernel fused|reference] "
     "[--json] [--peak] B,N,H,D …"},
    {"vectors", "attn vectors convert IN OUT [--top N] [--dtype f32|f16] | attn vectors info PATH"},
    {"train",
     "attn train --task next-word|classify|masked-word --data FILE [--valid FILE] [--vectors PATH | "
     "--learn-embeddings DIM] [--frozen-embeddings] [--min-count N] [--layers N] "
     "[--pool max|mean|mean+max|attention] [--dropout P] [--heads H] [--epochs N] "
     "[--patience N] [--lr X] [--batch N] [--seed S] [--mask P] [--resume] -o MODEL.safetensors"},
    {"predict", "attn predict --model MODEL [--top K] TEXT"},
    {"eval", "attn eval --model MODEL --data FILE"},
};

// The deepest subcommand the user named, or "" for the top level.
std::string chosen_command(const CLI::App& app) {
  auto subs = app.get_subcommands();
  return subs.empty() ? "" : subs.front()->get_name();
}

void print_usage_hint(const CLI::App& app) {
  std::string command = chosen_command(app);
  auto it = synopses.find(command);
  if (it != synopses.end())
    fmt::print(stderr, "usage: {}\nrun 'attn {} --help' for more\n", it->second, command);
  else
    fmt::print(stderr,
               "usage: attn <bench|embed|explain|heatmap|neighbors|mha|sdpa|vectors|train|predict|"
               "eval> …\nrun 'attn --help' for more\n");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"attn: self-attention on word vectors and tensors, exact and fast.\n"
               "Word vectors in, contextual embeddings out (see the seeds' pipeline).",
               "attn"};
  app.set_version_flag("--version", "attn 0.1.0");
  app.require_subcommand(1);
  attn::cli::add_embed_command(app);
  attn::cli::add_bench_command(app);
  attn::cli::add_explain_command(app);
  attn::cli::add_heatmap_command(app);
  attn::cli::add_neighbors_command(app);
  attn::cli::add_mha_command(app);
  attn::cli::add_sdpa_command(app);
  attn::cli::add_vectors_command(app);
  attn::cli::add_train_command(app);
  attn::cli::add_predict_command(app);
  attn::cli::add_eval_command(app);

  try {
    app.parse(argc, argv);
    return 0;
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    print_usage_hint(app);
    return 1;
  } catch (const attn::error& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    if (e.kind() == attn::error_kind::usage) {
      print_usage_hint(app);
      return 1;
    }
    return 2;
  } catch (const std::bad_alloc&) {
    fmt::print(stderr, "error: out of memory\n");
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 2;
  }
}
