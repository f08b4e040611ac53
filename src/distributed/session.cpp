#include "session.hpp"

#include <mpi.h>

#include <cstdio>
#include <cstdlib>

namespace attn::dist {

bool serialized_threads = false;

session::session(int& argc, char**& argv) {
  // SERIALIZED: OpenMP threads compute; MPI is called by one thread at a time, the main thread
  // or, during a ring step, the helper that drives the transfer (ring_attention.cpp).
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  serialized_threads = provided >= MPI_THREAD_SERIALIZED;
  // A command that ends with std::exit (attn train stopped after N steps) skips this object's
  // destructor: finalise then too, or mpirun reports the rank as failed.
  std::atexit(finalize_once);
}

session::~session() { finalize_once(); }

void finalize_once() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

int rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

int ranks() {
  int n = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

void abort_all(const char* message, int code) {
  std::fprintf(stderr, "error: rank %d: %s\n", rank(), message);
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, code);
  std::abort();  // MPI_Abort does not return; this keeps [[noreturn]] honest
}

}  // namespace attn::dist
