// One padded batch of token sequences, as every model reads it.
#pragma once

#include <cstdint>
#include <vector>

#include "nn/mean_pool.hpp"  // pool_row

namespace attn::nn {

// ids [B, L] (-1 after each sequence's end), the rows the head scores (a sentence, a prefix or
// one token each) and their target classes.
struct batch {
  int64_t size = 0, length = 0;
  std::vector<int64_t> ids, lengths;
  std::vector<pool_row> rows;
  std::vector<int64_t> targets;  // [R]
  int64_t tokens() const {       // real (unpadded) tokens
    int64_t n = 0;
    for (int64_t l : lengths) n += l;
    return n;
  }
};

}  // namespace attn::nn
