// How a sequence of `length` rows is shared by `ranks` ranks for ring attention: cut into 2K
// chunks whose sizes differ by at most one, rank r holds chunks r and 2K−1−r, stored one after
// the other (its local rows). With a causal mask each rank then has the same work: an early chunk
// paired with a late one, so every (query chunk, key chunk) pair is fully visible, fully hidden,
// or the diagonal (causal within the chunk).
#pragma once

#include <cstdint>

namespace attn::dist {

struct zigzag {
  int64_t length = 0;
  int ranks = 1;

  int chunks() const { return 2 * ranks; }
  int64_t begin(int chunk) const { return chunk * length / chunks(); }
  int64_t size(int chunk) const { return begin(chunk + 1) - begin(chunk); }
  int low(int r) const { return r; }
  int high(int r) const { return chunks() - 1 - r; }
  int64_t local_rows(int r) const { return size(low(r)) + size(high(r)); }
  int64_t max_local_rows() const {
    int64_t most = 0;
    for (int r = 0; r < ranks; ++r) most = local_rows(r) > most ? local_rows(r) : most;
    return most;
  }
};

}  // namespace attn::dist
