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

// An outcome as rank 0 sends it: a status, then the error's kind, file, problem and where.
enum class outcome : int { ok = 0, usage = 1, input = 2 };

void broadcast_string(std::string& s) {
  int size = static_cast<int>(s.size());
  MPI_Bcast(&size, 1, MPI_INT, 0, MPI_COMM_WORLD);
  s.resize(static_cast<size_t>(size));
  MPI_Bcast(s.data(), size, MPI_CHAR, 0, MPI_COMM_WORLD);
}

}  // namespace

void on_root(const std::function<void()>& step) {
  outcome status = outcome::ok;
  std::string file, problem, where;
  if (rank() == 0) {
    try {
      step();
    } catch (const error& e) {
      status = e.kind() == error_kind::usage ? outcome::usage : outcome::input;
      file = e.file(), problem = e.problem(), where = e.where();
    } catch (const std::bad_alloc&) {
      status = outcome::input, problem = "out of memory";
    } catch (const std::exception& e) {
      status = outcome::input, problem = e.what();
    }
  }
  if (ranks() == 1 && status == outcome::ok) return;
  int code = static_cast<int>(status);
  MPI_Bcast(&code, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (code == static_cast<int>(outcome::ok)) return;
  broadcast_string(file);
  broadcast_string(problem);
  broadcast_string(where);
  throw error(code == static_cast<int>(outcome::usage) ? error_kind::usage : error_kind::input,
              file, problem, where);
}

}  // namespace attn::dist
