// Hopper's warpgroup matrix products (wgmma, sm_90a): the four warps of a warpgroup multiply a
// 64-row A by an N-column B into a 64 × N float32 accumulator spread over their registers, A from
// shared memory or from registers, B from shared memory, both read through a descriptor.
// One wrapper per PTX instruction, named as in NVIDIA's PTX ISA (section "Asynchronous
// Warpgroup Level Matrix Multiply-Accumulate"). The wrappers are inline: they reach the code
// only where a kernel uses them, and the kernels that do are guarded by __CUDA_ARCH_FEAT_SM90_ALL
// (sm_90a), so other architectures and older toolkits compile without them.
//
// The accumulator's layout is mma.sync's per warp: warp w of the group holds rows 16w … 16w+15;
// lane l, for each 8-column block i, d[4i] and d[4i+1] at row 16w + l/4, columns 8i + 2(l%4) and
// + 1, d[4i+2] and d[4i+3] eight rows lower. A from registers is mma.sync m16n8k16's A fragment,
// so S's accumulator becomes P's operand as it does there.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cstdint>

namespace attn::cuda_kernels {

// A tile of R rows × C columns (C a multiple of 64) of 16-bit elements as wgmma's 128-byte swizzle
// reads it: C/64 column blocks of R rows × 128 bytes each; in a block, row r's 16-byte chunk c
// sits at chunk c ^ (r % 8) (which also spreads a row group over every bank). The offset of
// element (row, col), in elements; the tile starts on a 1024-byte boundary.
template <int R>
__host__ __device__ constexpr int swizzled_offset(int row, int col) {
  return (col / 64) * R * 64 + row * 64 + ((((col % 64) / 8) ^ (row & 7)) * 8) + col % 8;
}

// A shared-memory matrix descriptor with the 128-byte swizzle: the start address, the leading
// and stride byte offsets (each encoded >> 4), swizzle mode 1 in bits 62–63.
//   K-major (rows hold the reduction dimension, as Q and K do for S = Q·Kᵀ): the stride is the
//     1024 bytes from one 8-row group to the next; the leading offset is unused (1).
//   MN-major (the reduction runs down the rows, as the keys of V do for P·V): the leading offset
//     steps from one 64-column block to the next, the stride from one 8-row group to the next.
__device__ __forceinline__ uint64_t swizzled_descriptor(const void* start, uint32_t leading_bytes,
                                                        uint32_t stride_bytes) {
  const uint32_t address = static_cast<uint32_t>(__cvta_generic_to_shared(start));
  return static_cast<uint64_t>((address & 0x3FFFF) >> 4) | static_cast<uint64_t>((leading_bytes & 0x3FFFF) >> 4) << 16 |
         static_cast<uint64_t>((stride_bytes & 0x3FFFF) >> 4) << 32 | uint64_t{1} << 62;
}

// Orders this thread's earlier register writes before the wgmma that follow (their accumulators
// and A operands), as the PTX ISA requires.
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int pending> __device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(pending) : "memory");
}
// Pins registers that an in-flight wgmma writes (its accumulator) at this point of the program,
// so that the compiler neither reads them before the wait nor moves writes across it.
template <int N> __device__ __forceinline__ void wgmma_fence_operand(float (&r)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(r[i])::"memory");
}

// Makes this thread's ordinary shared-memory writes (cp.async's among them) visible to the
// asynchronous proxy that wgmma reads shared memory through.
__device__ __forceinline__ void fence_proxy_async_shared() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

#define ATTN_WGMMA_D32 \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, " \
  "%21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"
#define ATTN_WGMMA_OUT32(d) \
  "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
  "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), \
  "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), \
  "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), \
  "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
#define ATTN_WGMMA_D64 \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, " \
  "%21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, " \
  "%40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, " \
  "%59, %60, %61, %62, %63}"
#define ATTN_WGMMA_OUT64(d) \
  "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
  "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), \
  "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), \
  "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), \
  "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), \
  "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), \
  "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), \
  "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), \
  "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])

// d (+)= A·B, A (64 × 16) and B (16 × N, K-major) from shared memory; accumulate 0 ignores d.
template <typename T, int N> __device__ __forceinline__ void wgmma_ss(float (&d)[N / 2], uint64_t a, uint64_t b, int accumulate);
// d (+)= A·B, A (64 × 16) from registers, B (16 × N) MN-major (transposed) from shared memory.
template <typename T, int N> __device__ __forceinline__ void wgmma_rs(float (&d)[N / 2], const uint32_t (&a)[4], uint64_t b, int accumulate);

#define ATTN_WGMMA_SS(CTYPE, PTX_TYPE, N, ND, A, B, P)                                                    \
  template <> __device__ __forceinline__ void wgmma_ss<CTYPE, N>(float (&d)[ND], uint64_t a, uint64_t b,  \
                                                                   int accumulate) {                      \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" #P ", 0;\n"                                        \
                 "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." PTX_TYPE "." PTX_TYPE " "               \
                 ATTN_WGMMA_D##ND ", %" #A ", %" #B ", p, 1, 1, 0, 0;\n}\n"                                  \
                 : ATTN_WGMMA_OUT##ND(d)                                                                  \
                 : "l"(a), "l"(b), "r"(accumulate));                                                      \
  }
#define ATTN_WGMMA_RS(CTYPE, PTX_TYPE, N, ND, A0, A1, A2, A3, B, P)                                        \
  template <> __device__ __forceinline__ void wgmma_rs<CTYPE, N>(float (&d)[ND], const uint32_t (&a)[4], \
                                                                   uint64_t b, int accumulate) {          \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" #P ", 0;\n"                                        \
                 "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." PTX_TYPE "." PTX_TYPE " "               \
                 ATTN_WGMMA_D##ND ", {%" #A0 ", %" #A1 ", %" #A2 ", %" #A3 "}, %" #B ", p, 1, 1, 1;\n}\n"   \
                 : ATTN_WGMMA_OUT##ND(d)                                                                  \
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(accumulate));                  \
  }

ATTN_WGMMA_SS(__nv_bfloat16, "bf16", 64, 32, 32, 33, 34)
ATTN_WGMMA_SS(__nv_bfloat16, "bf16", 128, 64, 64, 65, 66)
ATTN_WGMMA_SS(__half, "f16", 64, 32, 32, 33, 34)
ATTN_WGMMA_SS(__half, "f16", 128, 64, 64, 65, 66)
ATTN_WGMMA_RS(__nv_bfloat16, "bf16", 64, 32, 32, 33, 34, 35, 36, 37)
ATTN_WGMMA_RS(__nv_bfloat16, "bf16", 128, 64, 64, 65, 66, 67, 68, 69)
ATTN_WGMMA_RS(__half, "f16", 64, 32, 32, 33, 34, 35, 36, 37)
ATTN_WGMMA_RS(__half, "f16", 128, 64, 64, 65, 66, 67, 68, 69)

#undef ATTN_WGMMA_SS
#undef ATTN_WGMMA_RS

}  // namespace attn::cuda_kernels
