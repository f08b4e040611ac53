// Ending on a signal: Ctrl-C (SIGINT), kill (SIGTERM) or a closed terminal (SIGHUP) removes
// every temporary file the run was writing (attn/temporary_files.hpp), so an interrupted
// command leaves no `OUT.tmp-PID` behind, then exits 128 + the signal's number (130 for Ctrl-C).
#pragma once

namespace attn::cli {

void remove_temporaries_on_signals();

// The handler itself, for a command that catches SIGINT for a while (train) and hands the
// next one back to it.
extern "C" void remove_temporaries_and_exit(int signal_number);

}  // namespace attn::cli
