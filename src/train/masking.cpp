#include "train/masking.hpp"

#include <algorithm>

namespace attn::train {

masked_sequence mask_words(const word_sequence& s, const masking& m, rng& r) {
  masked_sequence out;
  out.ids = s.ids;
  size_t length = s.ids.size();
  if (m.drop_final_stop > 0 && length > 2 &&
      std::find(m.stop_ids.begin(), m.stop_ids.end(), s.ids.back()) != m.stop_ids.end() &&
      r.uniform() < m.drop_final_stop)
    out.ids.pop_back(), --length;
  std::vector<int64_t> candidates;
  for (size_t t = 0; t < length; ++t)
    if (s.classes[t] >= 0) candidates.push_back(static_cast<int64_t>(t));
  // A lone token has no context to be predicted from.
  if (candidates.empty() || length < 2) return out;
  for (int64_t t : candidates)
    if (r.uniform() < m.share) out.positions.push_back(t);
  if (out.positions.empty()) out.positions.push_back(candidates[r.below(candidates.size())]);
  for (int64_t t : out.positions) {
    const auto k = static_cast<size_t>(t);
    out.targets.push_back(s.classes[k]);
    const double u = r.uniform();
    if (u < 0.8) out.ids[k] = m.mask_id;
    else if (u < 0.9) out.ids[k] = m.output_rows[r.below(m.output_rows.size())];
  }
  return out;
}

void group_by_length(std::vector<word_sequence>& chunk, size_t batch, rng& shuffle) {
  std::stable_sort(chunk.begin(), chunk.end(),
                   [](const word_sequence& a, const word_sequence& b) { return a.ids.size() < b.ids.size(); });
  std::vector<size_t> order(chunk.size() / batch);  // the full batches
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  shuffle.shuffle(order);
  if (chunk.size() % batch != 0) order.push_back(order.size());
  std::vector<word_sequence> grouped;
  grouped.reserve(chunk.size());
  for (size_t b : order)
    for (size_t k = b * batch; k < std::min(chunk.size(), (b + 1) * batch); ++k) grouped.push_back(std::move(chunk[k]));
  chunk = std::move(grouped);
}

std::vector<int64_t> pack_sizes(const std::vector<int64_t>& lengths, int64_t max_length) {
  std::vector<int64_t> sizes;
  int64_t tokens = 0;
  for (int64_t n : lengths) {
    if (sizes.empty() || tokens + n > max_length) {
      sizes.push_back(0);
      tokens = 0;
    }
    ++sizes.back();
    tokens += n;
  }
  return sizes;
}

std::vector<word_sequence> pack_sentences(std::vector<word_sequence>& chunk, const std::vector<int64_t>& lengths,
                                          int64_t max_length) {
  std::vector<word_sequence> packs;
  size_t next = 0;
  for (int64_t size : pack_sizes(lengths, max_length)) {
    word_sequence p = std::move(chunk[next++]);
    for (int64_t k = 1; k < size; ++k, ++next) {
      p.ids.insert(p.ids.end(), chunk[next].ids.begin(), chunk[next].ids.end());
      p.classes.insert(p.classes.end(), chunk[next].classes.begin(), chunk[next].classes.end());
    }
    packs.push_back(std::move(p));
  }
  chunk.clear();
  return packs;
}

nn::batch make_masked_batch(const std::vector<const masked_sequence*>& sequences) {
  nn::batch b;
  b.size = static_cast<int64_t>(sequences.size());
  for (const masked_sequence* s : sequences)
    b.length = std::max(b.length, static_cast<int64_t>(s->ids.size()));
  b.ids.assign(static_cast<size_t>(b.size * b.length), -1);
  for (int64_t i = 0; i < b.size; ++i) {
    const masked_sequence& s = *sequences[static_cast<size_t>(i)];
    b.lengths.push_back(static_cast<int64_t>(s.ids.size()));
    std::copy(s.ids.begin(), s.ids.end(), b.ids.begin() + i * b.length);
    for (size_t k = 0; k < s.positions.size(); ++k) {
      b.rows.push_back({i, s.positions[k] + 1});
      b.targets.push_back(s.targets[k]);
    }
  }
  return b;
}

}  // namespace attn::train
