// attn on an NVIDIA GPU: the fused attention forward and backward as CUDA kernels (src/cuda/),
// and the multi-head layer around them, for host tensors. Built with -DATTN_CUDA=ON (off by
// default: see docs/GPU.md); without it every function below but built() and available()
// throws a usage error.
//
//   attn::tensor o = attn::cuda::sdpa(q, k, v, {.causal = true}, attn::cuda::precision::bf16);
//
// The inputs are float32 host tensors, as for attn::sdpa; they are rounded to the precision on
// the device (to nearest, ties to even), the kernels multiply in it with float32 accumulation
// (the softmax, the log-sum-exp and every sum stay float32), and the results come back as
// float32 tensors. The layouts, GQA, masks, the causal rule and the fully masked row are
// attn::sdpa's.
#pragma once

#include <cstdint>
#include <string>

#include "attn/multihead_attention.hpp"
#include "attn/sdpa.hpp"
#include "attn/sdpa_backward.hpp"
#include "attn/tensor.hpp"

namespace attn::cuda {

bool built();      // compiled with ATTN_CUDA
bool available();  // built, and a CUDA device answers

// "NVIDIA H100 80GB HBM3, sm_90, 132 multiprocessors"; a usage error when !available().
std::string device_name();

enum class precision { float32, bf16, float16 };
// "float32" / "fp32", "bf16" / "bfloat16", "float16" / "fp16" / "half"; a usage error otherwise.
precision parse_precision(const std::string& name);
const char* precision_name(precision p);

// The kernel a forward of these head dimensions runs on the current device: the tensor cores
// for bf16 and float16 with D = Dv in {32, 64, 96, 128} (through wgmma on Hopper at 64 and 128),
// CUDA cores (float32 arithmetic) otherwise.
std::string forward_path(precision p, int64_t head_dim, int64_t value_dim);

// check_sdpa_shapes, and what the GPU adds: head sizes up to 256, B·H up to 65535, sequence
// lengths up to 2^30. A usage error naming what does not fit.
void check_shapes(const tensor& q, const tensor& k, const tensor& v, const tensor* mask);

// attn::sdpa_forward on the GPU: o [B, H, L, Dv] and, when lse_out is given, lse [B, H, L].
// options.dtype is not read (the precision says it); options.kernel must be fused. The weights
// (weights_out of attn::sdpa) are not formed there. float16 refuses inputs past ±65504.
tensor sdpa(const tensor& q, const tensor& k, const tensor& v, const sdpa_options& options, precision p,
            tensor* lse_out = nullptr);

// attn::sdpa_backward on the GPU, from the forward's o and lse (from cuda::sdpa with the same
// precision). Deterministic: each gradient row has one writer, no atomics: the same bits on
// every run.
sdpa_gradients sdpa_backward(const tensor& q, const tensor& k, const tensor& v, const tensor& o,
                             const tensor& lse, const tensor& grad_o, const sdpa_options& options,
                             precision p);

// layer.forward on the GPU: the same checks and masks, the four projections in float32 (a tiled
// float32 product of attn's own), the heads rounded to the precision for the fused attention
// above, the output float32. options.dtype is not read (the precision says it); the weights
// (weights_out of forward) are not formed there; with float16, a projected value past ±65504
// is a usage error (bf16 and float32 take it).
tensor mha(const multihead_attention& layer, const tensor& query, const tensor& key, const tensor& value,
           const mha_options& options, precision p);

// Times the kernels on device-resident random inputs q, k, v [B, H, L, D] (and grad_o for the
// backward): the median of `repeats` runs each, by CUDA events, after warm-up runs.
struct timing {
  double forward_s = 0;        // the forward alone
  double forward_backward_s = 0;  // forward then backward (0 when not asked)
};
timing time_sdpa(int64_t B, int64_t H, int64_t L, int64_t D, bool causal, precision p, int repeats,
                 bool backward);

}  // namespace attn::cuda
