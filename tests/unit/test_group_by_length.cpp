// group_by_length: the masked-word task's batches of sentences of like length.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "train/masking.hpp"
#include "train/rng.hpp"

namespace {

using attn::train::word_sequence;

// Sentences of lengths drawn from 1..64, each tagged by its first id so moves can be followed.
std::vector<word_sequence> sentences(size_t n, uint64_t seed) {
  attn::train::rng r(seed);
  std::vector<word_sequence> out(n);
  for (size_t i = 0; i < n; ++i) {
    out[i].ids.assign(1 + r.below(64), 0);
    out[i].ids[0] = static_cast<int64_t>(i);
    out[i].classes.assign(out[i].ids.size(), -1);
  }
  return out;
}

size_t longest(const std::vector<word_sequence>& s, size_t from, size_t to) {
  size_t m = 0;
  for (size_t k = from; k < to; ++k) m = std::max(m, s[k].ids.size());
  return m;
}

}  // namespace

TEST(group_by_length, batches_hold_like_lengths_in_a_drawn_order_and_lose_no_sentence) {
  for (const size_t n : {1u, 7u, 128u, 1000u, 4096u}) {
    for (const size_t batch : {1u, 32u, 128u}) {
      std::vector<word_sequence> chunk = sentences(n, n + batch);
      const std::vector<word_sequence> before = chunk;
      attn::train::rng shuffle(5);
      attn::train::group_by_length(chunk, batch, shuffle);
      ASSERT_EQ(chunk.size(), n);
      // The same sentences, each once.
      std::vector<int64_t> tags;
      for (const auto& s : chunk) tags.push_back(s.ids[0]);
      std::sort(tags.begin(), tags.end());
      for (size_t i = 0; i < n; ++i) ASSERT_EQ(tags[i], static_cast<int64_t>(i));
      for (const auto& s : chunk) ASSERT_EQ(s.ids, before[static_cast<size_t>(s.ids[0])].ids);
      // Each batch is a run of the length order: its lengths span no more than the sorted
      // sentences' at its place, so the padding is that of a sorted cut (at most the sorted
      // batch's spread), and a short last batch stays last.
      std::vector<size_t> sorted;
      for (const auto& s : before) sorted.push_back(s.ids.size());
      std::sort(sorted.begin(), sorted.end());
      size_t padded = 0, padded_unsorted = 0;
      for (size_t first = 0; first < n; first += batch) {
        const size_t end = std::min(n, first + batch);
        std::vector<size_t> lengths;
        for (size_t k = first; k < end; ++k) lengths.push_back(chunk[k].ids.size());
        std::sort(lengths.begin(), lengths.end());
        // The batch's lengths are a contiguous run of the sorted lengths.
        const auto at = std::search(sorted.begin(), sorted.end(), lengths.begin(), lengths.end());
        EXPECT_NE(at, sorted.end()) << n << " " << batch << " " << first;
        if (end - first < batch) {
          EXPECT_EQ(end, n);
        }
        for (size_t k = first; k < end; ++k) {
          padded += longest(chunk, first, end) - chunk[k].ids.size();
          padded_unsorted += longest(before, first, end) - before[k].ids.size();
        }
      }
      if (n >= 1000 && batch == 32) {
        EXPECT_LT(padded * 10, padded_unsorted) << n;
      }
      // The batches come in a drawn order, not shortest first.
      if (n / batch >= 8) {
        bool ascending = true;
        for (size_t first = batch; first + batch <= n; first += batch)
          ascending = ascending && chunk[first].ids.size() >= chunk[first - batch].ids.size();
        EXPECT_FALSE(ascending) << n << " " << batch;
      }
    }
  }
}

TEST(group_by_length, the_same_draw_gives_the_same_batches) {
  std::vector<word_sequence> a = sentences(1000, 1), b = a;
  attn::train::rng r1(9), r2(9);
  attn::train::group_by_length(a, 32, r1);
  attn::train::group_by_length(b, 32, r2);
  for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(a[i].ids, b[i].ids);
}
