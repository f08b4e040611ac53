// Token embeddings (a table lookup) and learned positional embeddings (added by position).
#pragma once

#include <cstdint>

namespace attn::nn {

// ids [N] (rows of the table; -1 = padding, which gives a zero vector), table [V, E] → x [N, E]
template <class T>
void embedding_forward(const int64_t* ids, const T* table, T* x, int64_t n, int64_t e);
// dtable[ids[i]] += dx[i]; padding rows give nothing
template <class T>
void embedding_backward(const int64_t* ids, const T* dx, T* dtable, int64_t n, int64_t e);

// x [B, L, E] += positions [P, E] row l at sequence position l (L ≤ P)
template <class T>
void positional_forward(const T* positions, T* x, int64_t b, int64_t l, int64_t e);
// dpositions [P, E] row l += Σ_batch dx[·, l]
template <class T>
void positional_backward(const T* dx, T* dpositions, int64_t b, int64_t l, int64_t e);

}  // namespace attn::nn
