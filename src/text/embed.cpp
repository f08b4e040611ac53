// text → tokens → static vectors E → basic self-attention → contextual embeddings C.
#include "attn/embed.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "attn/error.hpp"
#include "attn/sdpa.hpp"
#include "attn/tokenizer.hpp"

namespace attn {

embedding embed(std::string_view text, const vectors& vocab, const embed_options& options) {
  embedding out;
  std::vector<std::span<const float>> rows;
  for (std::string& token : tokenize(text)) {
    if (auto row = vocab.lookup(token)) {
      rows.push_back(*row);
      out.tokens.push_back(std::move(token));
    } else {
      out.unknown.push_back(std::move(token));
    }
  }
  if (options.strict && !out.unknown.empty())
    throw_usage(fmt::format("unknown token '{}' (not in the vectors of {}); drop --strict to "
                            "leave unknown tokens out",
                            out.unknown.front(), vocab.source()));
  if (rows.empty())
    throw_usage(out.unknown.empty()
                    ? std::string("the text has no tokens")
                    : fmt::format("no token of the text is in the vectors of {} (unknown: {})",
                                  vocab.source(), fmt::join(out.unknown, " ")));

  const int64_t n = static_cast<int64_t>(rows.size()), d = vocab.dim();
  out.static_vectors = tensor({n, d});
  float* e = out.static_vectors.data();
  for (int64_t i = 0; i < n; ++i) {
    const std::span<const float> v = rows[static_cast<size_t>(i)];
    std::copy(v.begin(), v.end(), e + i * d);
  }
  // C = softmax(E·Eᵀ·scale)·E through sdpa's fused kernel, as one head of one batch: memory
  // linear in N, and the same bits whatever else is kept.
  const tensor e4 = out.static_vectors.reshape({1, 1, n, d});
  sdpa_options attention;
  attention.scale = options.scale;
  tensor context = sdpa(e4, e4, e4, attention).reshape({n, d});
  if (options.keep_steps) out.steps = self_attention(out.static_vectors, options.scale);
  out.steps.scale = options.scale.resolve(d);
  out.steps.context = std::move(context);
  return out;
}

}  // namespace attn
