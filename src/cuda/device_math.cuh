// Device helpers the CUDA kernels share: element conversions, the tensor cores' 16×8×16 product,
// ldmatrix, asynchronous copies, base-2 exponentials. Each wraps one PTX instruction, named as
// in NVIDIA's PTX ISA, so the kernels read as the algorithm.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cstdint>
#include <type_traits>

namespace attn::cuda_kernels {

__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ __forceinline__ float to_float(__half x) { return __half2float(x); }

template <typename T> __device__ __forceinline__ T from_float(float x);
template <> __device__ __forceinline__ float from_float<float>(float x) { return x; }
template <> __device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }
template <> __device__ __forceinline__ __half from_float<__half>(float x) { return __float2half_rn(x); }

// Two floats rounded to the element type, the first in the low half (the lower column, as the
// tensor cores' fragments hold them).
template <typename T> __device__ __forceinline__ uint32_t pack_pair(float lo, float hi);
template <> __device__ __forceinline__ uint32_t pack_pair<__nv_bfloat16>(float lo, float hi) {
  __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&v);
}
template <> __device__ __forceinline__ uint32_t pack_pair<__half>(float lo, float hi) {
  __half2 v = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&v);
}

// d += a·b for a 16×16 A (row-major fragment, 4 registers of pairs), a 16×8 B (column fragment,
// 2 registers), a 16×8 float32 D (4 floats): rows lane/4 and lane/4 + 8, columns 2·(lane%4) + {0,1}.
template <typename T> __device__ __forceinline__ void mma_16x8x16(float d[4], const uint32_t a[4], uint32_t b0, uint32_t b1);
template <> __device__ __forceinline__ void mma_16x8x16<__nv_bfloat16>(float d[4], const uint32_t a[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
template <> __device__ __forceinline__ void mma_16x8x16<__half>(float d[4], const uint32_t a[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ uint32_t shared_address(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// Four 8×8 matrices of 16-bit elements from shared memory: lanes 8i … 8i+7 give the 16-byte rows
// of matrix i; lane l receives, of each matrix, row l/4, elements 2·(l%4) and 2·(l%4)+1.
__device__ __forceinline__ void ldmatrix_x4(uint32_t r[4], const void* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(shared_address(row)));
}
// The same, each matrix transposed: lane l receives elements (2·(l%4), l/4) and (2·(l%4)+1, l/4).
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t r[4], const void* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(shared_address(row)));
}

// 16 bytes global → shared without passing through registers; with valid false the 16 bytes
// are zero-filled and nothing is read (rows past the end of a tensor).
__device__ __forceinline__ void copy_16_async(void* dst_shared, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(shared_address(dst_shared)),
               "l"(src), "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void copy_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int pending> __device__ __forceinline__ void copy_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(pending));
}

// 2^x (the hardware's approximation, relative error about 2^-22; 2^-inf = 0).
__device__ __forceinline__ float exp2_approx(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// The sums' type: float64 for float32 inputs (H100-class GPUs run it at half the float32 rate;
// this path is the fallback, and float32 inputs ask for float32's accuracy), float32 otherwise.
template <typename T>
using sum_t = typename std::conditional<std::is_same<T, float>::value, double, float>::type;

constexpr float log2_e = 1.4426950408889634f;
constexpr float ln_2 = 0.6931471805599453f;

// The mask's values at or below the lowest float hide a key as -inf does (as on the CPU).
__device__ __forceinline__ float mask_term(float m) { return m <= -3.4028234663852886e38f ? -INFINITY : m; }

}  // namespace attn::cuda_kernels
