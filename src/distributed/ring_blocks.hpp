// Which kernel calls a ring step makes: this rank's queries against the K/V block that rank
// `origin` started with, in the zigzag layout. With a causal mask a pair of chunks is fully
// visible (the key chunk comes first), hidden (skipped) or the diagonal (causal within it).
// Pure arithmetic, no MPI: the tests check that over all ranks and steps every visible (query,
// key) pair is computed exactly once.
#pragma once

#include <cstdint>
#include <vector>

#include "zigzag.hpp"

namespace attn::dist {

// One kernel call of a ring step: local query rows [q0, q1) against the block's key rows
// [k0, k1), either all visible or causal within (the diagonal chunk).
struct block_call {
  int64_t q0, q1, k0, k1;
  bool causal;
};

// The calls for this rank's queries against the K/V block that rank `origin` started with.
// Pairs of chunks that are both fully visible and adjacent in memory share one call, so a causal
// step off the diagonal is one call of twice the rows, not two.
std::vector<block_call> calls_of_step(const zigzag& queries, const zigzag& keys, int rank,
                                      int origin, bool causal);

}  // namespace attn::dist
