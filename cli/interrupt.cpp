#include "interrupt.hpp"

#include <unistd.h>

#include <csignal>

#include "attn/temporary_files.hpp"

namespace attn::cli {

extern "C" void remove_temporaries_and_exit(int signal_number) {
  attn::remove_temporary_files();
  ::_exit(128 + signal_number);
}

void remove_temporaries_on_signals() {
  for (int s : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction action = {};
    action.sa_handler = remove_temporaries_and_exit;
    sigemptyset(&action.sa_mask);
    // A signal ignored when attn started (nohup, a background job's SIGINT) stays ignored.
    struct sigaction before = {};
    if (sigaction(s, nullptr, &before) == 0 && before.sa_handler == SIG_IGN) continue;
    sigaction(s, &action, nullptr);
  }
}

}  // namespace attn::cli
