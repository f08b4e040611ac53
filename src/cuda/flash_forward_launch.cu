// The tensor-core forward's launch: which block shape (warps × 16-row tiles a warp) and which of
// the kernel's refinements (forward_variant) run a problem. The table is measured, not derived:
// bf16 on an H200, 2026-11-26, two interleaved passes within 2% of each other (docs/GPU.md).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <atomic>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "cuda/flash_forward_launch.cuh"
#include "cuda/flash_forward_mma.cuh"
#include "cuda/launch_check.cuh"

namespace attn::cuda_kernels {

namespace {

struct forward_config {
  int warps, row_tiles, variant;
};

// The current device's multiprocessors, asked once per device (0–63).
int multiprocessors() {
  static std::atomic<int> known[64] = {};
  int device = 0, count = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return 132;
  if (device >= 0 && device < 64 && (count = known[device].load(std::memory_order_relaxed)) > 0) return count;
  if (cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device) != cudaSuccess || count <= 0)
    return 132;  // an H100's; only the causal block shape below depends on it
  if (device >= 0 && device < 64) known[device].store(count, std::memory_order_relaxed);
  return count;
}

// TFLOP/s of the choices against the next best, bf16 (bench/gpu/h200-2026-11-26-variants.txt,
// two passes; 4,2048,16,64 for D = 64, 1,4096,16,128 and 8,1024,32,128 for D = 128; the first
// version of the kernel in brackets):
//   D ≥ 96, full:   4 × 2, fold + lazy: 295 and 265 against 278 and 255 with every refinement
//                   (274 and 256);
//   D ≥ 96, causal: 4 × 1 when 128-row blocks would make under 4 waves (the diagonal leaves
//                   blocks unevenly loaded; 195 against 183 for 4 × 2 at 1,4096,16,128), else
//                   4 × 2 (195 against 186 for 4 × 1 at 8,1024,32,128), every refinement;
//   D ≤ 64, full:   4 × 2, every refinement: 243 against 237 with fold + lazy and 223 for the
//                   best 4 × 1 (198);
//   D ≤ 64, causal: 4 × 1, fold + lazy: 177 against 176 and 170 for the others (161).
// Two 128-thread blocks of 4 × 2 fit a multiprocessor (registers and shared memory).
forward_config choose(const attention_problem& p) {
  if (p.D >= 96) {
    if (!p.causal) return {4, 2, forward_lean};
    const int64_t blocks = p.B * p.H * ((p.L + 127) / 128);
    return blocks < 4 * 2 * static_cast<int64_t>(multiprocessors()) ? forward_config{4, 1, forward_tuned}
                                                                     : forward_config{4, 2, forward_tuned};
  }
  return p.causal ? forward_config{4, 1, forward_lean} : forward_config{4, 2, forward_tuned};
}

// ATTN_CUDA_FORWARD=4x1|4x2|8x2 forces the block shape, ATTN_CUDA_FORWARD_VARIANT=0|9|15 the
// refinements (bits of forward_variant: 0 the first version, 9 fold + lazy, 15 all four): for
// the tests (every shape on every head size) and for timing the choices against each other on
// the device. 8 × 2 and variant 0 are built for bf16 at D = 64 and 128 only; elsewhere they run
// as 4 × 2 and as 15. Any other value is an error rather than a silent substitute.
forward_config forced(forward_config c) {
  static const std::string shape = [] {
    const char* env = std::getenv("ATTN_CUDA_FORWARD");
    return std::string(env != nullptr ? env : "");
  }();
  static const std::string variant = [] {
    const char* env = std::getenv("ATTN_CUDA_FORWARD_VARIANT");
    return std::string(env != nullptr ? env : "");
  }();
  if (!shape.empty()) {
    if (shape != "4x1" && shape != "4x2" && shape != "8x2")
      throw std::runtime_error("ATTN_CUDA_FORWARD=" + shape + ": expected 4x1, 4x2 or 8x2");
    c = {shape[0] - '0', shape[2] - '0', c.variant};
  }
  if (!variant.empty()) {
    if (variant != "0" && variant != "9" && variant != "15")
      throw std::runtime_error("ATTN_CUDA_FORWARD_VARIANT=" + variant + ": expected 0, 9 or 15");
    c.variant = std::stoi(variant);
  }
  return c;
}

template <typename T, int D, int WARPS, int MT, int VARIANT>
void launch(const attention_problem& p, cudaStream_t stream) {
  auto kernel = flash_forward_mma_kernel<T, D, WARPS, MT, VARIANT>;
  constexpr int bytes = flash_forward_mma_shared_bytes<T, D, WARPS, MT>();
  allow_shared(kernel, bytes, "cudaFuncSetAttribute (shared memory of the tensor-core forward)");
  constexpr int rows = 16 * WARPS * MT;
  const dim3 grid(static_cast<unsigned>((p.L + rows - 1) / rows), static_cast<unsigned>(p.B * p.H));
  kernel<<<grid, WARPS * 32, bytes, stream>>>(
      static_cast<const T*>(p.q), static_cast<const T*>(p.k), static_cast<const T*>(p.v), static_cast<T*>(p.o),
      p.lse, p.mask, p.ms[0], p.ms[1], p.ms[2], p.ms[3], static_cast<int>(p.H), static_cast<int>(p.Hkv),
      static_cast<int>(p.L), static_cast<int>(p.S), p.scale * log2_e, p.causal);
  check_launch("the tensor-core forward");
}

template <typename T, int D>
void launch_config(const attention_problem& p, forward_config c, cudaStream_t stream) {
  if constexpr (std::is_same<T, __nv_bfloat16>::value && (D == 64 || D == 128)) {
    if (c.warps == 8) {
      if (c.variant == forward_lean) return launch<T, D, 8, 2, forward_lean>(p, stream);
      return launch<T, D, 8, 2, forward_tuned>(p, stream);
    }
    if (c.variant == 0)
      return c.row_tiles == 2 ? launch<T, D, 4, 2, 0>(p, stream) : launch<T, D, 4, 1, 0>(p, stream);
  }
  const bool lean = c.variant == forward_lean;
  if (c.row_tiles == 2) return lean ? launch<T, D, 4, 2, forward_lean>(p, stream) : launch<T, D, 4, 2, forward_tuned>(p, stream);
  return lean ? launch<T, D, 4, 1, forward_lean>(p, stream) : launch<T, D, 4, 1, forward_tuned>(p, stream);
}

template <typename T>
void launch_typed(const attention_problem& p, forward_config c, cudaStream_t stream) {
  switch (p.D) {
    case 32: return launch_config<T, 32>(p, c, stream);
    case 64: return launch_config<T, 64>(p, c, stream);
    case 96: return launch_config<T, 96>(p, c, stream);
    default: return launch_config<T, 128>(p, c, stream);
  }
}

}  // namespace

void launch_forward_tensor_cores(const attention_problem& p, cudaStream_t stream) {
  const forward_config c = forced(choose(p));
  if (p.type == element::bf16) return launch_typed<__nv_bfloat16>(p, c, stream);
  launch_typed<__half>(p, c, stream);
}

}  // namespace attn::cuda_kernels
