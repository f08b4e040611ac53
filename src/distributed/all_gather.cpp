#include "all_gather.hpp"

#include <mpi.h>

#include <climits>

#include "session.hpp"

namespace attn::dist {

std::vector<char> all_gather(const std::vector<char>& mine) {
  if (mine.size() > static_cast<size_t>(INT_MAX))
    abort_all("a gradient shard over 2 GiB cannot be sent in one piece", 2);
  const int n = ranks();
  std::vector<int> sizes(static_cast<size_t>(n)), offsets(static_cast<size_t>(n));
  int size = static_cast<int>(mine.size());
  MPI_Allgather(&size, 1, MPI_INT, sizes.data(), 1, MPI_INT, MPI_COMM_WORLD);
  long long total = 0;
  for (int r = 0; r < n; ++r) {
    offsets[static_cast<size_t>(r)] = static_cast<int>(total);
    total += sizes[static_cast<size_t>(r)];
  }
  // (Every rank sees the same sizes, so every rank stops here together.)
  if (total > INT_MAX) abort_all("the gradient shards exceed 2 GiB in all", 2);
  std::vector<char> all(static_cast<size_t>(total));
  MPI_Allgatherv(mine.data(), size, MPI_CHAR, all.data(), sizes.data(), offsets.data(), MPI_CHAR,
                 MPI_COMM_WORLD);
  return all;
}

}  // namespace attn::dist
