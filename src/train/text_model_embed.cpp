// attn::text_model's contextual embeddings: the output of the model's (last) attention block for
// each token, read from the forward's cache before the mean pool.
#include <algorithm>
#include <numeric>

#include "train/model_input.hpp"
#include "train/text_model_impl.hpp"

namespace attn {

contextual_embedding text_model::embed(std::string_view text) const {
  const impl& m = *impl_;
  const train::model_input in = train::read_input(m, text);
  nn::network_cache<float> cache;
  m.net.forward(in.batch, cache);
  // cache.y [1, L, E]: the last attention block's output. For next-word models the attention
  // is causal, so row t has seen tokens 0 … t only, as when the model predicts from prefix t.
  const int64_t l = in.batch.length, e = m.config.dim;
  contextual_embedding out;
  out.tokens = in.tokens;
  out.unknown = in.unknown;
  out.embeddings = tensor({l, e}, std::vector<float>(cache.y.begin(), cache.y.begin() + l * e));
  return out;
}

vectors text_model::embed_vocabulary() const {
  const impl& m = *impl_;
  // Each word once, at the row it reads (a fine-tuned word's copy, not the default vector).
  std::vector<std::string> names;
  std::vector<int64_t> rows;
  for (int64_t i = 0; i < m.inputs.size(); ++i) {
    const std::string& w = m.inputs.words()[static_cast<size_t>(i)];
    const int64_t row = m.inputs.find(w);
    if (row != i) continue;  // the default vector a learned row replaces
    names.push_back(w);
    rows.push_back(i);
  }
  const auto words = static_cast<int64_t>(rows.size());
  const int64_t e = m.config.dim;
  // A batch of one-token sequences per forward. 256 keeps the cache small and, at E = 100,
  // every product under serial_when_small's threshold: the 50,000 default words took 0.23 s on
  // the shared 2-core machine this way (and with one thread at any chunk size), but 0.5-3.8 s
  // in chunks of 512-8192, whose products went to two busy cores.
  constexpr int64_t chunk = 256;
  std::vector<float> values(static_cast<size_t>(words * e));
  nn::network_cache<float> cache;
  nn::batch b;
  b.length = 1;
  for (int64_t begin = 0; begin < words; begin += chunk) {
    const int64_t n = std::min(chunk, words - begin);
    b.size = n;
    b.ids.resize(static_cast<size_t>(n));
    std::copy_n(rows.begin() + begin, n, b.ids.begin());
    b.lengths.assign(static_cast<size_t>(n), 1);
    // Each sequence pooled alone, as predict would; only cache.y is read.
    b.rows.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) b.rows[static_cast<size_t>(i)] = {i, 1};
    m.net.forward(b, cache);
    std::copy(cache.y.begin(), cache.y.begin() + n * e, values.begin() + begin * e);
  }
  return vectors::from_values(std::move(names), e, std::move(values));
}

bool text_model::knows(std::string_view token) const {
  return impl_->inputs.find(std::string(token)) >= 0;
}

}  // namespace attn
