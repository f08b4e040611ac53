// Dropout (inverted, as PyTorch's: kept values are scaled by 1/(1 − p), so evaluation needs no
// change). The mask is drawn from a seed and each value's index by a hash, not from a stream of
// random numbers, so it does not depend on the order or thread that computes it: the same seed
// gives the same mask, and training repeats bit for bit.
#pragma once

#include <cstdint>

namespace attn::nn {

// mask [N]: 0 with probability p, else 1/(1 − p); drawn from (seed, index)
template <class T>
void dropout_mask(uint64_t seed, double p, T* mask, int64_t n);
// Another seed derived from seed for the k-th of several masks of one step (0 stays 0: no dropout).
uint64_t seed_for(uint64_t seed, uint64_t k);

// x [N] *= mask [N]; the backward is the same product on the gradient
template <class T>
void dropout_apply(const T* mask, T* x, int64_t n);

}  // namespace attn::nn
