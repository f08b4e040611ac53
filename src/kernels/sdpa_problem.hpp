// From attn::tensor to the fused kernels' flash_problem: what attn::sdpa and the training pair
// (sdpa_forward / sdpa_backward) both hand the kernels.
#pragma once

#include "attn/sdpa.hpp"
#include "attn/tensor.hpp"
#include "kernels/flash_problem.hpp"

namespace attn::kernels {

// The kernels read rows in place; only a non-unit last stride needs a copy.
tensor rows_contiguous(const tensor& t);

// The inputs part of a fused problem (q, k, v, mask, causal, scale); qc, kc, vc have contiguous
// rows and, like options.attn_mask, must outlive the problem. out, weights and lse are left null.
flash_problem describe_problem(const tensor& qc, const tensor& kc, const tensor& vc, const sdpa_options& options);

}  // namespace attn::kernels
