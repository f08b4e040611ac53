// Beam search's length penalty. A hypothesis's log-probability only falls as it grows, so ranking
// by it alone favours short texts; it is divided by GNMT's normaliser ((5 + |Y|) / 6)^α (Wu et
// al. 2016), as Marian and CTranslate2 do, rather than by |Y|^α: the +5 keeps the first few
// tokens from swinging the ratio. |Y| counts every token whose probability is in the sum: the
// words made, and the end token when the hypothesis chose it. α = 0: no penalty; α > 0 favours
// longer texts, α < 0 shorter ones.
#pragma once

#include <cmath>
#include <cstdint>

namespace attn::decode {

inline double length_normalizer(int64_t length, double alpha) {
  return std::pow((5.0 + static_cast<double>(length)) / 6.0, alpha);
}

}  // namespace attn::decode
