// attn train as attn and attn-mpi share it: attn-mpi's ranks train one model together (each
// computing its shards of every batch), and only rank 0 speaks and writes the file.
#pragma once

#include <functional>

#include "attn/train.hpp"

namespace CLI {
class App;
}

namespace attn::cli {

struct train_hooks {
  const gradient_exchange* exchange = nullptr;  // null: one process
  bool speaks = true;  // prints progress and the summary, and writes the model file
};

void add_train_command(CLI::App& app, const train_hooks& hooks);

}  // namespace attn::cli
