#include "agree.hpp"

#include <mpi.h>

#include <exception>
#include <new>
#include <string>
#include <vector>

#include "attn/error.hpp"
#include "session.hpp"

namespace attn::dist {

namespace {

// An outcome as the rank that speaks for all sends it: a status, then the error's kind, file,
// problem and where.
enum class outcome : int { ok = 0, usage = 1, input = 2 };

void broadcast_string(std::string& s, int root) {
  int size = static_cast<int>(s.size());
  MPI_Bcast(&size, 1, MPI_INT, root, MPI_COMM_WORLD);
  s.resize(static_cast<size_t>(size));
  MPI_Bcast(s.data(), size, MPI_CHAR, root, MPI_COMM_WORLD);
}

// A step's outcome on this rank.
struct attempt {
  outcome status = outcome::ok;
  std::string file, problem, where;
};

attempt run_step(const std::function<void()>& step) {
  attempt a;
  try {
    step();
  } catch (const error& e) {
    a.status = e.kind() == error_kind::usage ? outcome::usage : outcome::input;
    a.file = e.file(), a.problem = e.problem(), a.where = e.where();
  } catch (const std::bad_alloc&) {
    a.status = outcome::input, a.problem = "out of memory";
  } catch (const std::exception& e) {
    a.status = outcome::input, a.problem = e.what();
  }
  return a;
}

// Every rank learns root's outcome (code already agreed) and throws it.
[[noreturn]] void throw_from(int root, int code, attempt& a) {
  broadcast_string(a.file, root);
  broadcast_string(a.problem, root);
  broadcast_string(a.where, root);
  throw error(code == static_cast<int>(outcome::usage) ? error_kind::usage : error_kind::input,
              a.file, a.problem, a.where);
}

}  // namespace

void on_root(const std::function<void()>& step) {
  attempt a;
  if (rank() == 0) a = run_step(step);
  if (ranks() == 1 && a.status == outcome::ok) return;
  int code = static_cast<int>(a.status);
  MPI_Bcast(&code, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (code == static_cast<int>(outcome::ok)) return;
  throw_from(0, code, a);
}

void on_every_rank(const std::function<void()>& step) {
  attempt a = run_step(step);
  // The lowest failing rank (ranks() when none failed) speaks for all.
  int failed = a.status == outcome::ok ? ranks() : rank();
  MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (failed == ranks()) return;
  int code = static_cast<int>(a.status);
  MPI_Bcast(&code, 1, MPI_INT, failed, MPI_COMM_WORLD);
  throw_from(failed, code, a);
}

}  // namespace attn::dist
