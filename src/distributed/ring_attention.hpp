// Ring attention: scaled dot-product attention with Q, K and V split along the sequence over
// the ranks (zigzag.hpp). Each rank keeps its queries; the K/V blocks travel round the ring, one
// step per rank, the transfer of the next block overlapped with the fused kernel on the block in
// hand, and the blocks' results merged by their log-sum-exp (block_merge.hpp). Memory per rank:
// its own rows, two K/V blocks in flight and the running result, O(N / K).
//   q_local [B, H, Lr, D], k_local [B, Hkv, Sr, D], v_local [B, Hkv, Sr, Dv] → [B, H, Lr, Dv]
// where Lr, Sr are this rank's local rows of the query and key layouts. Every rank calls it
// together. A causal mask needs the same layout for queries and keys (L = S).
#pragma once

#include "attn/sdpa.hpp"
#include "attn/tensor.hpp"
#include "zigzag.hpp"

namespace attn::dist {

// Where one call's time went, on this rank: the kernel and the merging, and the time spent
// waiting for the next block once the work on the current one was done (the transfer the
// compute did not hide).
struct ring_profile {
  double compute_s = 0, wait_s = 0;
  double merge_s = 0;         // the part of compute_s spent folding block results together
  double bytes_per_step = 0;  // the largest K/V block sent in one step
};

tensor ring_sdpa(const tensor& q_local, const tensor& k_local, const tensor& v_local,
                 const zigzag& queries, const zigzag& keys, const sdpa_options& options,
                 ring_profile* profile = nullptr);

// The time one ring step's transfer takes alone (no compute beside it), median of `reps`, for
// blocks of `floats` floats: what the compute must hide.
double ring_transfer_seconds(int64_t floats, int reps);

}  // namespace attn::dist
