#include "attn/sentence_vector.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "attn/error.hpp"

namespace attn {

sentence_pool parse_sentence_pool(std::string_view name) {
  if (name == "mean") return sentence_pool::mean;
  if (name == "max") return sentence_pool::max;
  if (name == "cls") return sentence_pool::cls;
  if (name == "last") return sentence_pool::last;
  throw_usage(fmt::format("--pool '{}': expected mean, max, cls or last", name));
}

const char* sentence_pool_name(sentence_pool pool) {
  switch (pool) {
    case sentence_pool::mean: return "mean";
    case sentence_pool::max: return "max";
    case sentence_pool::cls: return "cls";
    case sentence_pool::last: return "last";
  }
  return "mean";
}

std::vector<float> pool_sentence(const tensor& rows, sentence_pool pool, bool normalize) {
  if (rows.rank() != 2 || rows.dim(0) == 0) return {};
  const int64_t l = rows.dim(0), d = rows.dim(1);
  const float* x = rows.data();
  // Sums in double: a long text's mean does not drift with its length.
  std::vector<double> v(static_cast<size_t>(d));
  switch (pool) {
    case sentence_pool::mean:
      for (int64_t t = 0; t < l; ++t)
        for (int64_t j = 0; j < d; ++j) v[static_cast<size_t>(j)] += x[t * d + j];
      for (double& value : v) value /= static_cast<double>(l);
      break;
    case sentence_pool::max:
      for (int64_t j = 0; j < d; ++j) {
        float m = x[j];
        for (int64_t t = 1; t < l; ++t) m = std::max(m, x[t * d + j]);
        v[static_cast<size_t>(j)] = m;
      }
      break;
    case sentence_pool::cls:
    case sentence_pool::last: {
      const int64_t t = pool == sentence_pool::cls ? 0 : l - 1;
      for (int64_t j = 0; j < d; ++j) v[static_cast<size_t>(j)] = x[t * d + j];
      break;
    }
  }
  if (normalize) {
    double norm = 0;
    for (double value : v) norm += value * value;
    norm = std::sqrt(norm);
    if (norm > 0)
      for (double& value : v) value /= norm;
  }
  return std::vector<float>(v.begin(), v.end());
}

}  // namespace attn
