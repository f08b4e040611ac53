// The tensor-core forward's launch (flash_forward_launch.cu): which kernel (wgmma on Hopper, else
// mma.sync), block shape and refinements run a problem, chosen from measurements on the device (docs/GPU.md).
#pragma once

#include <cuda_runtime.h>

#include "cuda/cuda_problem.hpp"

namespace attn::cuda_kernels {

// bf16 or float16, D = Dv in {32, 64, 96, 128}, 16-byte aligned tensors (the caller checks).
void launch_forward_tensor_cores(const attention_problem& p, cudaStream_t stream);

// Whether the current device runs the wgmma kernels (a Hopper GPU and a build with sm_90a).
bool wgmma_forward_available();
// Whether this problem's forward runs the wgmma kernel (the choice, or what ATTN_CUDA_FORWARD forces).
bool forward_runs_wgmma(const attention_problem& p);

}  // namespace attn::cuda_kernels
