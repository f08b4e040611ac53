#include "train/sequence_score.hpp"

#include "train/device_training.hpp"

namespace attn::train {

namespace {

constexpr size_t score_batch = 64;

}  // namespace

scored_examples score_sequences(const models::network<float>& net, const std::vector<masked_sequence>& sequences,
                                device_training* device) {
  score_tally tally;
  const auto classes = static_cast<size_t>(net.shape().classes);
  std::vector<const masked_sequence*> group;
  size_t rows = 0;
  const auto flush = [&] {
    if (!group.empty()) {
      if (device != nullptr) device->score(make_masked_batch(group), tally);
      else tally.add(net, make_masked_batch(group));
    }
    group.clear();
    rows = 0;
  };
  for (const masked_sequence& s : sequences) {
    const size_t more = s.positions.size();
    if (group.size() == score_batch || (rows + more) * classes > max_scoring_logits) flush();
    group.push_back(&s);
    rows += more;
  }
  flush();
  return tally.result();
}

}  // namespace attn::train
