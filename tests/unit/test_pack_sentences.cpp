// pack_sentences: the masked-word task's sequences of consecutive sentences (--pack-sentences).
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "train/masking.hpp"
#include "train/rng.hpp"

namespace {

using attn::train::word_sequence;

TEST(pack_sentences, packs_take_sentences_in_order_while_they_fit) {
  // 64 tokens at most: 30 + 30 fit, a third 30 does not; a 70-token piece (the survey counted
  // more than max_length: never, but a pack must still hold it) stands alone; 64 exactly fits.
  EXPECT_EQ(attn::train::pack_sizes({30, 30, 30, 4, 70, 60, 4, 1}, 64), (std::vector<int64_t>{2, 2, 1, 2, 1}));
  EXPECT_EQ(attn::train::pack_sizes({64, 1, 63}, 64), (std::vector<int64_t>{1, 2}));
  EXPECT_TRUE(attn::train::pack_sizes({}, 64).empty());
}

TEST(pack_sentences, a_pack_is_its_sentences_joined_and_no_token_is_lost) {
  attn::train::rng r(7);
  std::vector<word_sequence> chunk(500);
  std::vector<int64_t> lengths;
  std::vector<int64_t> all_ids, all_classes;
  int64_t next_id = 0;
  for (word_sequence& s : chunk) {
    const int64_t surveyed = 1 + static_cast<int64_t>(r.below(64));
    const int64_t kept = surveyed - static_cast<int64_t>(r.below(2));  // a word without a row left out
    for (int64_t k = 0; k < kept; ++k) {
      s.ids.push_back(next_id++);
      s.classes.push_back(next_id % 3 == 0 ? -1 : next_id);
    }
    all_ids.insert(all_ids.end(), s.ids.begin(), s.ids.end());
    all_classes.insert(all_classes.end(), s.classes.begin(), s.classes.end());
    lengths.push_back(surveyed);
  }
  const std::vector<int64_t> sizes = attn::train::pack_sizes(lengths, 64);
  const std::vector<word_sequence> packs = attn::train::pack_sentences(chunk, lengths, 64);
  ASSERT_EQ(packs.size(), sizes.size());
  EXPECT_LT(packs.size(), 500u * 3 / 4);  // sentences of 1–64 tokens: most packs hold two or more
  std::vector<int64_t> ids, classes;
  size_t first = 0;
  for (size_t p = 0; p < packs.size(); ++p) {
    EXPECT_LE(packs[p].ids.size(), 64u);
    EXPECT_EQ(packs[p].ids.size(), packs[p].classes.size());
    const int64_t surveyed = std::accumulate(lengths.begin() + static_cast<std::ptrdiff_t>(first),
                                             lengths.begin() + static_cast<std::ptrdiff_t>(first + sizes[p]), int64_t{0});
    EXPECT_LE(static_cast<int64_t>(packs[p].ids.size()), surveyed);
    first += static_cast<size_t>(sizes[p]);
    ids.insert(ids.end(), packs[p].ids.begin(), packs[p].ids.end());
    classes.insert(classes.end(), packs[p].classes.begin(), packs[p].classes.end());
  }
  EXPECT_EQ(first, 500u);
  EXPECT_EQ(ids, all_ids);  // every token, in the corpus's order
  EXPECT_EQ(classes, all_classes);
}

}  // namespace
