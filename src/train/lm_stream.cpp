#include "train/lm_stream.hpp"

#include <algorithm>

namespace attn::train {

int64_t append_paragraph(const std::vector<std::string>& tokens, const word_index& words,
                         std::vector<int64_t>& stream) {
  const int64_t unknown = words.find(unknown_token);
  int64_t missing = 0;
  for (const std::string& t : tokens) {
    const int64_t id = words.find(t);
    missing += id < 0 ? 1 : 0;
    stream.push_back(id < 0 ? unknown : id);
  }
  stream.push_back(words.find(end_token));
  return missing;
}

int64_t count_windows(int64_t stream_ids, int64_t context) {
  return stream_ids < 2 ? 0 : (stream_ids - 1 + context - 1) / context;
}

std::vector<masked_sequence> next_token_windows(const std::vector<int64_t>& stream, int64_t context) {
  std::vector<masked_sequence> windows;
  const auto n = static_cast<int64_t>(stream.size());
  for (int64_t begin = 0; begin + 1 < n; begin += context) {
    const int64_t length = std::min(context, n - 1 - begin);
    masked_sequence w;
    w.ids.assign(stream.begin() + begin, stream.begin() + begin + length);
    w.targets.assign(stream.begin() + begin + 1, stream.begin() + begin + length + 1);
    w.positions.resize(static_cast<size_t>(length));
    for (int64_t t = 0; t < length; ++t) w.positions[static_cast<size_t>(t)] = t;
    windows.push_back(std::move(w));
  }
  return windows;
}

}  // namespace attn::train
