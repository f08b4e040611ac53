// Moving whole tensors between rank 0 and the ring's layout: rank 0 sends each rank its rows of
// a [B, H, L, D] tensor (its two zigzag chunks along L, one after the other), and collects the
// ranks' rows of the result back into one tensor in sequence order.
#pragma once

#include "attn/tensor.hpp"
#include "zigzag.hpp"

namespace attn::dist {

// Rank 0's shape, on every rank (rank 0 passes the tensor's, the others anything).
shape_t broadcast_shape(const shape_t& shape);

// This rank's rows [B, H, local_rows(rank), D] of `full`, which only rank 0 needs to hold; the
// others pass an empty tensor and the shape from broadcast_shape.
tensor scatter_rows(const tensor& full, const shape_t& shape, const zigzag& layout);

// On rank 0 the whole [B, H, L, D] from every rank's `local` rows; an empty tensor elsewhere.
tensor gather_rows(const tensor& local, const zigzag& layout);

// The rows of chunk lo then chunk hi of rank r, as one dense tensor.
tensor local_rows(const tensor& full, const zigzag& layout, int r);

}  // namespace attn::dist
