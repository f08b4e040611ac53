#include "ring_blocks.hpp"

namespace attn::dist {

std::vector<block_call> calls_of_step(const zigzag& qz, const zigzag& kz, int r, int origin,
                                      bool causal) {
  const int q_chunks[2] = {qz.low(r), qz.high(r)};
  const int k_chunks[2] = {kz.low(origin), kz.high(origin)};
  const int64_t q_edges[3] = {0, qz.size(q_chunks[0]), qz.local_rows(r)};
  const int64_t k_edges[3] = {0, kz.size(k_chunks[0]), kz.local_rows(origin)};
  // visible[i][j]: query part i sees all of key part j; diagonal: the same chunk.
  bool visible[2][2], diagonal[2][2];
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) {
      visible[i][j] = !causal || k_chunks[j] < q_chunks[i];
      diagonal[i][j] = causal && k_chunks[j] == q_chunks[i];
    }
  std::vector<block_call> calls;
  // The key range each query part sees in full: both parts, one, or none (k0 == k1).
  int64_t k_from[2], k_to[2];
  for (int i = 0; i < 2; ++i) {
    if (visible[i][0] && visible[i][1])
      k_from[i] = k_edges[0], k_to[i] = k_edges[2];
    else if (visible[i][0])
      k_from[i] = k_edges[0], k_to[i] = k_edges[1];
    else if (visible[i][1])
      k_from[i] = k_edges[1], k_to[i] = k_edges[2];
    else
      k_from[i] = k_to[i] = 0;
  }
  if (k_from[0] == k_from[1] && k_to[0] == k_to[1]) {
    if (k_to[0] > k_from[0]) calls.push_back({q_edges[0], q_edges[2], k_from[0], k_to[0], false});
  } else {
    for (int i = 0; i < 2; ++i)
      if (k_to[i] > k_from[i])
        calls.push_back({q_edges[i], q_edges[i + 1], k_from[i], k_to[i], false});
  }
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j)
      if (diagonal[i][j])
        calls.push_back({q_edges[i], q_edges[i + 1], k_edges[j], k_edges[j + 1], true});
  return calls;
}

}  // namespace attn::dist
