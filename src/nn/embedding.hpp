// Token embeddings (a table lookup) and learned positional embeddings (added by position).
// The table may come in two parts: pre-trained rows (frozen unless fine-tuned) and the rows
// learned for words the pre-trained vectors lack; ids past the first part index the second.
#pragma once

#include <cstdint>

namespace attn::nn {

// ids [N] (-1 = padding, which gives a zero vector); id < split reads table [split, E], id ≥ split
// reads extra [·, E] row id − split → x [N, E]
template <class T>
void embedding_forward(const int64_t* ids, const T* table, int64_t split, const T* extra, T* x,
                       int64_t n, int64_t e);
// dtable[ids[i]] += dx[i] (skipped when dtable is null: frozen rows), dextra likewise for the
// ids ≥ split; padding rows give nothing
template <class T>
void embedding_backward(const int64_t* ids, const T* dx, T* dtable, int64_t split, T* dextra,
                        int64_t n, int64_t e);

// x [B, L, E] += positions [P, E] row l at sequence position l (L ≤ P)
template <class T>
void positional_forward(const T* positions, T* x, int64_t b, int64_t l, int64_t e);
// dpositions [P, E] row l += Σ_batch dx[·, l]
template <class T>
void positional_backward(const T* dx, T* dpositions, int64_t b, int64_t l, int64_t e);

}  // namespace attn::nn
