#include "app.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <new>

#include "attn/error.hpp"
#include "cli_common.hpp"
#include "interrupt.hpp"

namespace attn::cli {

namespace {

// The deepest subcommand the user named, or "" for the top level.
std::string chosen_command(const CLI::App& app) {
  auto subs = app.get_subcommands();
  return subs.empty() ? "" : subs.front()->get_name();
}

void print_usage_hint(const std::string& program, const std::vector<subcommand>& commands,
                      const CLI::App& app) {
  const std::string command = chosen_command(app);
  for (const subcommand& c : commands)
    if (c.name == command) {
      fmt::print(stderr, "usage: {}\nrun '{} {} --help' for more\n", c.synopsis, program, command);
      return;
    }
  std::vector<std::string> names;
  for (const subcommand& c : commands) names.push_back(c.name);
  fmt::print(stderr, "usage: {} <{}> …\nrun '{} --help' for more\n", program, fmt::join(names, "|"),
             program);
}

}  // namespace

std::vector<subcommand> standard_subcommands() {
  return {
      {"embed",
       "attn embed [--vectors PATH] [--scale sqrt|none|NUMBER] [--format text|json|csv|npy] "
       "[--pool mean|max|cls|last [--normalize]] [-o FILE] [--strict] TEXT | --batch FILE\n"
       "       attn embed --model MODEL [--hide-token] [--layer K] [--format text|json|csv|npy] "
       "[--pool mean|max|cls|last [--normalize]] [-o FILE] [--strict] TEXT | --batch FILE",
       add_embed_command},
      {"bench",
       "attn bench [--causal] [--backward] [--threads T] [--reps R] [--kernel fused|reference] "
       "[--dtype float32|bf16|float16] [--json] [--peak] [--device cpu|cuda] B,N,H,D …",
       add_bench_command},
      {"explain",
       "attn explain [--vectors PATH] [--scale sqrt|none|NUMBER] [--color auto|always|never] "
       "[--html] [-o FILE] TEXT",
       add_explain_command},
      {"heatmap",
       "attn heatmap [--vectors PATH | --model MODEL [--layer all|N]] [--head all|N] [--scale sqrt|none|NUMBER] "
       "TEXT -o FILE.svg|FILE.html",
       add_heatmap_command},
      {"neighbors", "attn neighbors [--vectors PATH | --model MODEL [--hide-token]] [--top K] --word W TEXT",
       add_neighbors_command},
      {"mha",
       "attn mha --weights W.safetensors --heads H --query Q.npy [--key K.npy --value V.npy] "
       "[--causal] [--key-padding-mask M.npy] [--attn-mask M.npy] -o OUT.npy "
       "[--attn-weights-out AW.npy]",
       add_mha_command},
      {"sdpa",
       "attn sdpa --query Q.npy --key K.npy --value V.npy [--causal] [--scale S] "
       "[--attn-mask M.npy] [--kernel fused|reference] -o OUT.npy "
       "[--dtype float32|bf16|float16] [--grad-output G.npy --dq DQ.npy --dk DK.npy --dv DV.npy] [--device cpu|cuda]",
       add_sdpa_command},
      {"vectors",
       "attn vectors convert IN OUT [--top N] [--dtype f32|f16] | attn vectors info PATH",
       add_vectors_command},
      {"train",
       "attn train --task next-word|classify|masked-word|lm|translate --data FILE [--valid FILE] [--vectors "
       "PATH | --learn-embeddings DIM] [--frozen-embeddings] [--min-count N] [--layers N] "
       "[--pool max|mean|mean+max|attention] [--dropout P] [--heads H] [--epochs N] "
       "[--patience N] [--lr X] [--batch N] [--shards N] [--seed S] [--mask P] [--vocab N] "
       "[--pieces N] [--context T] [--max-tokens N] [--time 30m] [--adaptive-softmax CUT,...] [--resume] -o MODEL.safetensors\n"
       "       attn train --task translate --source FILE --target FILE [--valid-source FILE --valid-target FILE] "
       "[--pieces N] [--max-length N] [--label-smoothing E] [--batch-tokens N] [--time 60m] -o MODEL.safetensors",
       add_train_command},
      {"predict", "attn predict --model MODEL [--top K] TEXT", add_predict_command},
      {"eval",
       "attn eval --model MODEL --data FILE [--every N] [--seed S]\n"
       "       attn eval --model TRANSLATOR --source FILE --target FILE [--beam N] | attn eval --translations FILE "
       "--target FILE",
       add_eval_command},
      {"generate",
       "attn generate [--model MODEL] [--max-words N] [--temperature T] [--top-k K] [--top-p P] "
       "[--seed S] [--beam N [--n-best K] [--length-penalty A]] [PROMPT]",
       add_generate_command},
      {"tokenize", "attn tokenize [--model MODEL [--ids | --vocabulary]] [--data FILE | TEXT]", add_tokenize_command},
      {"translate",
       "attn translate --model MODEL [--beam 5] [--length-penalty A] [--n-best K] [--max-length N] [--alignment] "
       "[-o FILE] [TEXT | --batch FILE]",
       add_translate_command},
  };
}

int run_app(const std::string& program, const std::string& description,
            const std::vector<subcommand>& commands, int argc, char** argv, bool report_errors) {
  remove_temporaries_on_signals();
  CLI::App app{description, program};
  app.set_version_flag("--version", program + " 0.1.0");
  app.require_subcommand(1);
  for (const subcommand& c : commands) c.add(app);

  // What each error prints (when reporting) and the exit code it maps to.
  const auto fail = [&](const std::string& message, bool usage) {
    if (report_errors) {
      fmt::print(stderr, "error: {}\n", escape_for_message(message));
      if (usage) print_usage_hint(program, commands, app);
    }
    return usage ? 1 : 2;
  };
  // A first word that names no command: say so and list them (CLI11 alone would say that a
  // subcommand is required, as if none had been given).
  if (argc > 1 && argv[1][0] != '-') {
    const std::string word = argv[1];
    bool known = false;
    for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
      known = known || sub->check_name(word);
    if (!known) {
      std::vector<std::string> names;
      for (const subcommand& c : commands) names.push_back(c.name);
      if (report_errors) {
        fmt::print(stderr, "error: unknown command '{}'; the commands are {}\n",
                   escape_for_message(word), fmt::join(names, ", "));
        print_usage_hint(program, commands, app);
      }
      return 1;
    }
  }
  try {
    app.parse(argc, argv);
    return 0;
  } catch (const CLI::CallForHelp& e) {
    return report_errors ? app.exit(e) : 0;
  } catch (const CLI::CallForAllHelp& e) {
    return report_errors ? app.exit(e) : 0;
  } catch (const CLI::CallForVersion& e) {
    return report_errors ? app.exit(e) : 0;
  } catch (const CLI::ParseError& e) {
    return fail(e.what(), true);
  } catch (const attn::error& e) {
    return fail(e.what(), e.kind() == attn::error_kind::usage);
  } catch (const std::bad_alloc&) {
    return fail("out of memory", false);
  } catch (const std::exception& e) {
    return fail(e.what(), false);
  }
}

}  // namespace attn::cli
