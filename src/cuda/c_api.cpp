// libattn_cuda.so: the CUDA kernels behind a C interface on device pointers, for callers that
// hold GPU memory already (PyTorch tensors through ctypes: tests/cuda/, bench/gpu/). Tensors must
// be dense and row-major, as in cuda_problem.hpp (the caller checks: a pointer carries no
// strides); a tensor not 16-byte aligned takes the CUDA-core path. Each function returns 0, or
// -1 with the message left for attn_cuda_last_error().
#include <cuda_runtime.h>

#include <cstdint>
#include <exception>
#include <stdexcept>
#include <string>

#include "cuda/cuda_problem.hpp"

namespace {

thread_local std::string last_error;

attn::cuda_kernels::attention_problem problem(int type, const void* q, const void* k, const void* v, void* o,
                                              float* lse, int64_t B, int64_t H, int64_t Hkv, int64_t L, int64_t S,
                                              int64_t D, int64_t Dv, float scale, int causal, const float* mask,
                                              const int64_t* mask_strides) {
  if (B < 0 || L < 0 || S < 0 || D < 1 || Dv < 1) throw std::runtime_error("sizes must not be negative (D, Dv at least 1)");
  if (mask != nullptr && mask_strides == nullptr) throw std::runtime_error("a mask needs its four strides");
  if (q == nullptr || k == nullptr || v == nullptr || o == nullptr) throw std::runtime_error("a tensor pointer is null");
  attn::cuda_kernels::attention_problem p;
  p.B = B, p.H = H, p.Hkv = Hkv, p.L = L, p.S = S, p.D = D, p.Dv = Dv;
  p.q = q, p.k = k, p.v = v, p.o = o, p.lse = lse;
  p.mask = mask;
  if (mask != nullptr)
    for (int i = 0; i < 4; ++i) p.ms[i] = mask_strides[i];
  p.causal = causal != 0;
  p.scale = scale;
  p.type = static_cast<attn::cuda_kernels::element>(type);
  if (type < 0 || type > 2) throw std::runtime_error("type must be 0 (float32), 1 (bf16) or 2 (float16)");
  if (H < 1 || Hkv < 1 || H % Hkv != 0) throw std::runtime_error("Hkv must divide H");
  return p;
}

template <typename F>
int guarded(F&& f) {
  try {
    f();
    return 0;
  } catch (const std::exception& e) {
    last_error = e.what();
    return -1;
  }
}

}  // namespace

extern "C" {

const char* attn_cuda_last_error() { return last_error.c_str(); }

const char* attn_cuda_forward_path(int type, int64_t D, int64_t Dv) {
  attn::cuda_kernels::attention_problem p;
  p.type = static_cast<attn::cuda_kernels::element>(type);
  p.D = D, p.Dv = Dv;
  return attn::cuda_kernels::forward_path(p);
}

int attn_cuda_sdpa_forward(int type, const void* q, const void* k, const void* v, void* o, float* lse, int64_t B,
                           int64_t H, int64_t Hkv, int64_t L, int64_t S, int64_t D, int64_t Dv, float scale,
                           int causal, const float* mask, const int64_t* mask_strides, void* stream) {
  return guarded([&] {
    attn::cuda_kernels::flash_forward(problem(type, q, k, v, o, lse, B, H, Hkv, L, S, D, Dv, scale, causal, mask, mask_strides),
                                      stream);
  });
}

// workspace: B·H·L floats.
int attn_cuda_sdpa_backward(int type, const void* q, const void* k, const void* v, const void* o, const float* lse,
                            const void* grad_o, void* dq, void* dk, void* dv, float* workspace, int64_t B, int64_t H,
                            int64_t Hkv, int64_t L, int64_t S, int64_t D, int64_t Dv, float scale, int causal,
                            const float* mask, const int64_t* mask_strides, void* stream) {
  return guarded([&] {
    auto p = problem(type, q, k, v, const_cast<void*>(o), const_cast<float*>(lse), B, H, Hkv, L, S, D, Dv, scale, causal,
                     mask, mask_strides);
    attn::cuda_kernels::flash_backward(p, {grad_o, dq, dk, dv}, workspace, stream);
  });
}

}  // extern "C"
