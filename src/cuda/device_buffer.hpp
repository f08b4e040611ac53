// What attn::cuda's host code shares: one device allocation owned by an object, CUDA's errors
// as exceptions, the precision as the kernels' element type.
#pragma once

#include <cuda_runtime.h>
#include <fmt/format.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>

#include "attn/cuda.hpp"
#include "attn/error.hpp"
#include "cuda/cuda_problem.hpp"

namespace attn::cuda::detail {

using cuda_kernels::element;

inline void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(fmt::format("CUDA: {}: {}", what, cudaGetErrorString(e)));
}

// Kernel launch failures come back as std::runtime_error; they name the kernel.
template <typename F>
void run_kernels(F&& f) {
  try {
    f();
  } catch (const std::runtime_error& e) {
    if (dynamic_cast<const attn::error*>(&e) != nullptr) throw;
    throw std::runtime_error(fmt::format("CUDA: {}", e.what()));
  }
}

inline void require_device() {
  if (!available()) throw_usage("no CUDA device answers on this machine (--device cuda needs one)");
}

// What one launch of the kernels takes (flash_dispatch.cu checks the same before launching):
// usage errors, named before any device work.
inline void check_launch_limits(int64_t batch_heads, int64_t longest_sequence, int64_t head_size, int64_t value_size) {
  if (head_size > 256 || value_size > 256)
    throw_usage(fmt::format("head sizes above 256 (D = {}, Dv = {}) are not supported on CUDA", head_size, value_size));
  if (batch_heads > 65535)
    throw_usage(fmt::format("B·H = {} (batch × heads) is above 65535, the most one CUDA launch takes", batch_heads));
  if (longest_sequence > (int64_t{1} << 30)) throw_usage("sequence lengths above 2^30 are not supported on CUDA");
}

inline element to_element(precision p) {
  switch (p) {
    case precision::float32: return element::float32;
    case precision::bf16: return element::bf16;
    case precision::float16: return element::float16;
  }
  return element::float32;
}

inline size_t element_bytes(precision p) { return p == precision::float32 ? 4 : 2; }

// One device allocation, freed with its owner.
class device_buffer {
 public:
  explicit device_buffer(size_t bytes) {
    if (bytes > 0) check(cudaMalloc(&ptr_, bytes), "cudaMalloc");
  }
  ~device_buffer() {
    if (ptr_ != nullptr) cudaFree(ptr_);
  }
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;
  void* get() const { return ptr_; }
  float* floats() const { return static_cast<float*>(ptr_); }

 private:
  void* ptr_ = nullptr;
};

// A CUDA event, destroyed with its owner.
class device_event {
 public:
  device_event() { check(cudaEventCreate(&event_), "cudaEventCreate"); }
  ~device_event() { cudaEventDestroy(event_); }
  device_event(const device_event&) = delete;
  device_event& operator=(const device_event&) = delete;
  cudaEvent_t get() const { return event_; }

 private:
  cudaEvent_t event_{};
};

}  // namespace attn::cuda::detail
