// The MPI session of one attn-mpi process: started once in main, ended when it goes out of scope.
// Run without mpirun, the process is one rank of a world of one. The rest of attn-mpi reaches the
// world through rank() and ranks(); no header of src/distributed/ includes mpi.h.
#pragma once

namespace attn::dist {

class session {
 public:
  session(int& argc, char**& argv);
  ~session();
  session(const session&) = delete;
  session& operator=(const session&) = delete;
};

// Ends the MPI session unless it has ended (the session's destructor, and at std::exit).
void finalize_once();

// Whether MPI lets a thread other than the main one make MPI calls (one thread at a time).
extern bool serialized_threads;

int rank();   // this process's place in the world, 0 … ranks() − 1
int ranks();  // how many processes share the work

// Ends every rank at once with `code`, after printing `message` as one error line. For failures
// that only this rank sees in the middle of a collective step (out of memory), where waiting to
// agree with the others would hang them.
[[noreturn]] void abort_all(const char* message, int code);

}  // namespace attn::dist
