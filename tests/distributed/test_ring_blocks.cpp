// The ring's schedule against its specification: over all ranks and steps, every (query, key)
// pair the mask lets through is computed exactly once, and no other pair at all.
#include <gtest/gtest.h>

#include <vector>

#include "distributed/ring_blocks.hpp"
#include "distributed/zigzag.hpp"

namespace attn::dist {
namespace {

// The global row of local row `i` of rank r (its low chunk, then its high chunk).
int64_t global_row(const zigzag& z, int r, int64_t i) {
  const int64_t low = z.size(z.low(r));
  return i < low ? z.begin(z.low(r)) + i : z.begin(z.high(r)) + (i - low);
}

void check_cover(int K, int64_t L, int64_t S, bool causal) {
  const zigzag qz{L, K}, kz{S, K};
  std::vector<int> seen(static_cast<size_t>(L * S), 0);
  for (int r = 0; r < K; ++r)
    for (int step = 0; step < K; ++step) {
      const int origin = (r - step + K) % K;
      for (const block_call& c : calls_of_step(qz, kz, r, origin, causal))
        for (int64_t i = c.q0; i < c.q1; ++i)
          for (int64_t j = c.k0; j < c.k1; ++j) {
            if (c.causal && j - c.k0 > i - c.q0) continue;  // top-left causal within the call
            ++seen[static_cast<size_t>(global_row(qz, r, i) * S + global_row(kz, origin, j))];
          }
    }
  for (int64_t q = 0; q < L; ++q)
    for (int64_t k = 0; k < S; ++k) {
      const int want = !causal || k <= q ? 1 : 0;
      ASSERT_EQ(seen[static_cast<size_t>(q * S + k)], want)
          << "K=" << K << " L=" << L << " S=" << S << " causal=" << causal << " query " << q
          << " key " << k;
    }
}

TEST(ring_blocks, every_visible_pair_once_causal_and_not) {
  for (int K = 1; K <= 6; ++K)
    for (int64_t L = 2 * K; L <= 2 * K + 13; ++L) {
      check_cover(K, L, L, true);
      check_cover(K, L, L, false);
    }
  check_cover(3, 129, 129, true);
  check_cover(5, 1001, 1001, true);
}

TEST(ring_blocks, queries_and_keys_of_different_lengths) {
  check_cover(3, 129, 77, false);
  check_cover(4, 8, 300, false);
}

TEST(ring_blocks, causal_work_is_balanced) {
  // Every rank computes the same number of pairs (up to the chunks' one-row differences).
  const int K = 4;
  const zigzag z{4096, K};
  std::vector<int64_t> work(K, 0);
  for (int r = 0; r < K; ++r)
    for (int step = 0; step < K; ++step)
      for (const block_call& c : calls_of_step(z, z, r, (r - step + K) % K, true))
        work[static_cast<size_t>(r)] += (c.q1 - c.q0) * (c.k1 - c.k0) / (c.causal ? 2 : 1);
  for (int r = 1; r < K; ++r) EXPECT_EQ(work[static_cast<size_t>(r)], work[0]);
}

TEST(zigzag, chunks_tile_the_sequence) {
  for (int K = 1; K <= 7; ++K)
    for (int64_t L = 2 * K; L < 2 * K + 20; ++L) {
      const zigzag z{L, K};
      int64_t total = 0;
      for (int c = 0; c < z.chunks(); ++c) {
        EXPECT_EQ(z.begin(c), total);
        EXPECT_GE(z.size(c), L / z.chunks());
        EXPECT_LE(z.size(c), L / z.chunks() + 1);
        total += z.size(c);
      }
      EXPECT_EQ(total, L);
    }
}

}  // namespace
}  // namespace attn::dist
