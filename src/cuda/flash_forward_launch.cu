// The tensor-core forward's launch: on Hopper the wgmma kernel for D = 64 and 128 and its shape
// (warpgroups a block, keys a tile); elsewhere the mma.sync kernel's block shape (warps × 16-row
// tiles a warp) and refinements (forward_variant). The tables are measured, not derived: bf16
// on an H200, 2026-11-26 (docs/GPU.md).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <iterator>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "cuda/flash_forward_launch.cuh"
#include "cuda/flash_forward_mma.cuh"
#include "cuda/flash_forward_wgmma.cuh"
#include "cuda/launch_check.cuh"

namespace attn::cuda_kernels {

namespace {

struct forward_config {
  int warps, row_tiles, variant;
  int wgmma_keys = 0;      // > 0: the wgmma kernel with key tiles of this many (warps etc. unused)
  bool wgmma_overlap = false;  // its S(t + 1) computed during tile t's softmax
  int wgmma_groups = 2;        // its warpgroups a block (64 query rows each)
};

// 1 when the current device runs this build's sm_90a code, where the wgmma kernel lives.
__global__ void wgmma_probe_kernel(int* answer) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  *answer = 1;
#else
  *answer = 0;
#endif
}

}  // namespace

// Whether the wgmma kernels run here: a Hopper GPU (compute capability 9.0) and a build with
// sm_90a among its architectures (-DCMAKE_CUDA_ARCHITECTURES="80;90a", the default; "90" or
// "native" build sm_90 code, which has no wgmma, and the mma.sync kernels run instead). Asked
// of the device by a one-thread kernel, since only the device knows which of the build's codes
// it loaded; the answer is kept per device (0–63). The probe allocates, launches and copies
// synchronously on the default stream, so the first call on a device belongs outside a CUDA
// graph's capture. It is not made while an earlier error is pending (that error is left for its
// owner to report), and a probe that failed is not remembered: the next call asks again.
bool wgmma_forward_available() {
  static std::atomic<int> known[64] = {};  // 0 unknown, 1 no, 2 yes
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess || device < 0 || device >= 64) return false;
  const int state = known[device].load(std::memory_order_relaxed);
  if (state != 0) return state == 2;
  int major = 0, minor = 0;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess)
    return false;
  if (major != 9 || minor != 0) {
    known[device].store(1, std::memory_order_relaxed);
    return false;
  }
  if (cudaPeekAtLastError() != cudaSuccess) return false;  // someone else's error: not ours to clear
  int* flag = nullptr;
  int answer = -1;
  if (cudaMalloc(&flag, sizeof(int)) != cudaSuccess) {
    cudaGetLastError();  // our own failure; asked again next time
    return false;
  }
  wgmma_probe_kernel<<<1, 1>>>(flag);
  const bool asked = cudaGetLastError() == cudaSuccess &&
                     cudaMemcpy(&answer, flag, sizeof(int), cudaMemcpyDeviceToHost) == cudaSuccess;
  cudaFree(flag);
  cudaGetLastError();
  if (!asked || (answer != 0 && answer != 1)) return false;
  known[device].store(answer == 1 ? 2 : 1, std::memory_order_relaxed);
  return answer == 1;
}

namespace {

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
forward_config choose_mma(const attention_problem& p) {
  if (p.D >= 96) {
    if (!p.causal) return {4, 2, forward_lean};
    const int64_t blocks = p.B * p.H * ((p.L + 127) / 128);
    return blocks < 4 * 2 * static_cast<int64_t>(multiprocessors()) ? forward_config{4, 1, forward_tuned}
                                                                     : forward_config{4, 2, forward_tuned};
  }
  return p.causal ? forward_config{4, 1, forward_lean} : forward_config{4, 2, forward_tuned};
}

forward_config choose(const attention_problem& p) {
  // Hopper: the wgmma kernel (bf16, H200, 2026-11-26, every variant forced against PyTorch in
  // the same invocation; bench/gpu/h200-2026-11-26-wgmma.txt): D = 128, three warpgroups a block
  // and key tiles of 64 (366, 265, 325 and 221 TFLOP/s at 1,4096,16,128 full and causal and
  // 8,1024,32,128 full and causal, against 337, 248, 296 and 224 for two warpgroups and tiles of
  // 128, and 275–305 for the others at 1,4096 full; the mma.sync kernel's best there, 291);
  // D = 64, two warpgroups and tiles of 64 (292 and 217 at 4,2048,16,64 full and causal, the
  // others 186–248 and 149–200). S(t + 1) overlapped with tile t's softmax was slower everywhere.
  if (p.D == 128 && wgmma_forward_available()) return {4, 2, forward_lean, 64, false, 3};
  if (p.D == 64 && wgmma_forward_available()) return {4, 2, forward_lean, 64, false, 2};
  return choose_mma(p);
}

// ATTN_CUDA_FORWARD=4x1|4x2|8x2 forces the mma.sync kernel's block shape (on Hopper too),
// ATTN_CUDA_FORWARD_VARIANT=0|9|15 its refinements (bits of forward_variant: 0 the first version,
// 9 fold + lazy, 15 all four); ATTN_CUDA_FORWARD=wgmma64|wgmma128[-overlap]|wgmma64x1|wgmma64x3
// the wgmma kernel's key tile, overlap and warpgroups (where it runs: Hopper, D = 64 or 128;
// elsewhere the mma.sync choice). The refinements apply only where the mma.sync kernel runs.
// For the tests (every kernel on every head size) and for timing
// the choices against each other on the device. 8 × 2 and variant 0 are built for bf16 at D = 64
// and 128 only; elsewhere they run as 4 × 2 and as 15. Any other value is an error rather than a
// silent substitute.
forward_config forced(const attention_problem& p, forward_config c) {
  static const std::string shape = [] {
    const char* env = std::getenv("ATTN_CUDA_FORWARD");
    return std::string(env != nullptr ? env : "");
  }();
  static const std::string variant = [] {
    const char* env = std::getenv("ATTN_CUDA_FORWARD_VARIANT");
    return std::string(env != nullptr ? env : "");
  }();
  if (!shape.empty()) {
    if (shape.rfind("wgmma", 0) == 0) {
      // wgmma<keys>[x<warpgroups>][-overlap]: keys 64 or 128, warpgroups 1, 2 (default) or 3
      static const char* const known[] = {"wgmma64", "wgmma128", "wgmma64-overlap", "wgmma128-overlap",
                                          "wgmma64x1", "wgmma64x3"};
      if (std::find(std::begin(known), std::end(known), shape) == std::end(known))
        throw std::runtime_error("ATTN_CUDA_FORWARD=" + shape + ": expected 4x1, 4x2, 8x2, wgmma64, wgmma128, "
                                 "wgmma64-overlap, wgmma128-overlap, wgmma64x1 or wgmma64x3");
      forward_config w{4, 2, forward_lean, shape.rfind("wgmma64", 0) == 0 ? 64 : 128,
                       shape.find("-overlap") != std::string::npos, 2};
      if (shape == "wgmma64x1") w.wgmma_groups = 1;
      if (shape == "wgmma64x3") w.wgmma_groups = 3;
      if ((p.D == 64 || p.D == 128) && wgmma_forward_available()) return w;
      // elsewhere: the mma.sync kernel's choice
    } else if (shape != "4x1" && shape != "4x2" && shape != "8x2") {
      throw std::runtime_error("ATTN_CUDA_FORWARD=" + shape + ": expected 4x1, 4x2, 8x2 or a wgmma variant");
    } else {  // an mma.sync shape, with the refinements the mma.sync choice would take
      c = {shape[0] - '0', shape[2] - '0', choose_mma(p).variant};
    }
  }
  if (!variant.empty()) {
    if (variant != "0" && variant != "9" && variant != "15")
      throw std::runtime_error("ATTN_CUDA_FORWARD_VARIANT=" + variant + ": expected 0, 9 or 15");
    c.variant = std::stoi(variant);
  }
  return c;
}

}  // namespace

bool forward_runs_wgmma(const attention_problem& p) { return forced(p, choose(p)).wgmma_keys > 0; }

namespace {

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

template <typename T, int D, int BC, bool OVERLAP, int WGS = 2>
void launch_wgmma(const attention_problem& p, cudaStream_t stream) {
  auto kernel = flash_forward_wgmma_kernel<T, D, BC, OVERLAP, WGS>;
  constexpr int bytes = flash_forward_wgmma_shared_bytes<D, BC, WGS>(), rows = 64 * WGS;
  allow_shared(kernel, bytes, "cudaFuncSetAttribute (shared memory of the wgmma forward)");
  const dim3 grid(static_cast<unsigned>((p.L + rows - 1) / rows), static_cast<unsigned>(p.B * p.H));
  kernel<<<grid, 128 * WGS, bytes, stream>>>(
      static_cast<const T*>(p.q), static_cast<const T*>(p.k), static_cast<const T*>(p.v), static_cast<T*>(p.o),
      p.lse, p.mask, p.ms[0], p.ms[1], p.ms[2], p.ms[3], static_cast<int>(p.H), static_cast<int>(p.Hkv),
      static_cast<int>(p.L), static_cast<int>(p.S), p.scale * log2_e, p.causal);
  check_launch("the wgmma forward");
}

template <typename T, int D>
void launch_wgmma_sized(const attention_problem& p, forward_config c, cudaStream_t stream) {
  if (c.wgmma_groups == 1) return launch_wgmma<T, D, 64, false, 1>(p, stream);
  if (c.wgmma_groups == 3) return launch_wgmma<T, D, 64, false, 3>(p, stream);
  if (c.wgmma_keys == 64)
    return c.wgmma_overlap ? launch_wgmma<T, D, 64, true>(p, stream) : launch_wgmma<T, D, 64, false>(p, stream);
  return c.wgmma_overlap ? launch_wgmma<T, D, 128, true>(p, stream) : launch_wgmma<T, D, 128, false>(p, stream);
}

template <typename T>
void launch_wgmma_typed(const attention_problem& p, forward_config c, cudaStream_t stream) {
  if (p.D == 64) return launch_wgmma_sized<T, 64>(p, c, stream);
  launch_wgmma_sized<T, 128>(p, c, stream);
}

}  // namespace

void launch_forward_tensor_cores(const attention_problem& p, cudaStream_t stream) {
  const forward_config c = forced(p, choose(p));
  if (c.wgmma_keys > 0) {
    if (p.type == element::bf16) return launch_wgmma_typed<__nv_bfloat16>(p, c, stream);
    return launch_wgmma_typed<__half>(p, c, stream);
  }
  if (p.type == element::bf16) return launch_typed<__nv_bfloat16>(p, c, stream);
  launch_typed<__half>(p, c, stream);
}

}  // namespace attn::cuda_kernels
