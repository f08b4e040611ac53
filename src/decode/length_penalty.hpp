// Beam search's length penalty. A hypothesis's log-probability only falls as it grows, so ranking
// by it alone favours short texts; it is divided by |Y|^α, as CTranslate2's length_penalty,
// fairseq's --lenpen and Marian's --normalize define it (the form issue #54's translator is held
// to), not by GNMT's ((5 + |Y|) / 6)^α. |Y| counts every token whose probability is in the sum:
// the words made, and the end token when the hypothesis chose it. α = 0: no penalty; α > 0
// favours longer texts, α < 0 shorter ones.
#pragma once

#include <cmath>
#include <cstdint>

namespace attn::decode {

inline double length_normalizer(int64_t length, double alpha) {
  // (A hypothesis that chose nothing, not even the end token, has nothing to divide.)
  return length > 0 ? std::pow(static_cast<double>(length), alpha) : 1.0;
}

}  // namespace attn::decode
