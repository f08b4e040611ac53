// A kernel launch's failure as an exception naming the kernel (launches return no status: CUDA
// keeps the last error).
#pragma once

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace attn::cuda_kernels {

inline void check_launch(const char* what) {
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

}  // namespace attn::cuda_kernels
