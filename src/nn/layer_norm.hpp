// Layer normalisation (nn.LayerNorm over the last dimension, eps 1e-5): each row is centred,
// divided by its standard deviation (biased, as PyTorch), then scaled and shifted per feature.
#pragma once

#include <cstdint>

namespace attn::nn {

// x [N, E], gamma, beta [E] → y [N, E]; mean [N] and rstd [N] (1/√(var + eps)) kept for the
// backward
template <class T>
void layer_norm_forward(const T* x, const T* gamma, const T* beta, T* y, T* mean, T* rstd,
                        int64_t n, int64_t e);
// dy [N, E] → dx [N, E] += , dgamma, dbeta [E] +=
template <class T>
void layer_norm_backward(const T* dy, const T* x, const T* gamma, const T* mean, const T* rstd,
                         T* dx, T* dgamma, T* dbeta, int64_t n, int64_t e);

}  // namespace attn::nn
