// Which kernel runs an attention problem, and its launch: the tensor-core forward and backward
// for bf16/fp16 with D = Dv in {32, 64, 96, 128} and 16-byte aligned tensors; the CUDA-core
// kernels for every other shape and for float32.
#include <cuda_runtime.h>

#include <cstdlib>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "cuda/cuda_problem.hpp"
#include "cuda/element_types.cuh"
#include "cuda/flash_backward_mma.cuh"
#include "cuda/flash_backward_wgmma.cuh"
#include "cuda/flash_cuda_cores.cuh"
#include "cuda/flash_forward_launch.cuh"
#include "cuda/launch_check.cuh"
#include "cuda/row_delta.cuh"

namespace attn::cuda_kernels {

namespace {

bool tensor_core_shape(const attention_problem& p) {
  return p.type != element::float32 && p.D == p.Dv && (p.D == 32 || p.D == 64 || p.D == 96 || p.D == 128);
}

// cp.async and the paired stores move 16 and 4 bytes at a time: a view at an odd offset (a
// caller's device pointer) takes the CUDA-core path instead.
bool aligned_16(const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % 16 == 0; }
bool tensor_core_ready(const attention_problem& p, const attention_gradients* g = nullptr) {
  bool ok = tensor_core_shape(p) && aligned_16(p.q) && aligned_16(p.k) && aligned_16(p.v) && aligned_16(p.o);
  if (g != nullptr) ok = ok && aligned_16(g->grad_o) && aligned_16(g->dq) && aligned_16(g->dk) && aligned_16(g->dv);
  return ok;
}

// One launch covers every (batch, head) in gridDim.y, which CUDA caps at 65535.
void check_grid(const attention_problem& p) {
  constexpr int64_t max_heads = 65535, max_rows = int64_t{1} << 30;
  if (p.B * p.H > max_heads || p.B * p.Hkv > max_heads)
    throw std::runtime_error("B·H = " + std::to_string(p.B * p.H) + " (batch × heads) is above 65535, the most one CUDA launch takes");
  if (p.L > max_rows || p.S > max_rows) throw std::runtime_error("sequence lengths above 2^30 are not supported on CUDA");
}

// ATTN_CUDA_BACKWARD_EVERY_PAIR=1: the tensor-core backward checks every (query, key) pair for
// masks and edges on every tile, as its first version did (for timing against the default).
bool backward_folds_interior() {
  static const bool every_pair = [] {
    const char* env = std::getenv("ATTN_CUDA_BACKWARD_EVERY_PAIR");
    return env != nullptr && std::string(env) == "1";
  }();
  return !every_pair;
}

cores_args make_cores_args(const attention_problem& p) {
  return cores_args{static_cast<int>(p.H), static_cast<int>(p.Hkv), static_cast<int>(p.L), static_cast<int>(p.S),
                    static_cast<int>(p.D), static_cast<int>(p.Dv), p.ms[0], p.ms[1], p.ms[2], p.ms[3],
                    p.mask, p.scale, p.causal};
}

dim3 rows_grid_of(int64_t rows, int64_t heads, int per_block) {
  return dim3(static_cast<unsigned>((rows + per_block - 1) / per_block), static_cast<unsigned>(heads));
}
dim3 rows_grid(int64_t rows, int64_t heads) { return rows_grid_of(rows, heads, cores_rows); }

template <typename T, int DMAX>
void launch_cores_forward(const attention_problem& p, cudaStream_t stream) {
  flash_forward_cores_kernel<T, DMAX><<<rows_grid(p.L, p.B * p.H), cores_rows, 0, stream>>>(
      static_cast<const T*>(p.q), static_cast<const T*>(p.k), static_cast<const T*>(p.v), static_cast<T*>(p.o),
      p.lse, make_cores_args(p));
  check_launch("the CUDA-core forward");
}

template <typename T, int DMAX>
void launch_cores_backward(const attention_problem& p, const attention_gradients& g, float* delta,
                           cudaStream_t stream) {
  const cores_args a = make_cores_args(p);
  flash_backward_dkdv_kernel<T, DMAX><<<rows_grid(p.S, p.B * p.Hkv), cores_rows, 0, stream>>>(
      static_cast<const T*>(p.q), static_cast<const T*>(p.k), static_cast<const T*>(p.v),
      static_cast<const T*>(g.grad_o), p.lse, delta, static_cast<T*>(g.dk), static_cast<T*>(g.dv), a);
  check_launch("the backward's dK, dV");
  flash_backward_dq_kernel<T, DMAX><<<rows_grid(p.L, p.B * p.H), cores_rows, 0, stream>>>(
      static_cast<const T*>(p.q), static_cast<const T*>(p.k), static_cast<const T*>(p.v),
      static_cast<const T*>(g.grad_o), p.lse, delta, static_cast<T*>(g.dq), a);
  check_launch("the backward's dQ");
}

void launch_row_delta(const attention_problem& p, const attention_gradients& g, float* delta, cudaStream_t stream) {
  const int64_t rows = p.B * p.H * p.L;
  with_element_type(p.type, [&](auto zero) {
    using T = decltype(zero);
    row_delta_kernel<T><<<static_cast<unsigned>((rows + 7) / 8), 256, 0, stream>>>(
        static_cast<const T*>(p.o), static_cast<const T*>(g.grad_o), delta, rows, static_cast<int>(p.Dv));
  });
  check_launch("the backward's row term");
}

template <typename T, int D>
void launch_mma_backward(const attention_problem& p, const attention_gradients& g, const float* delta,
                         cudaStream_t stream) {
  const mma_backward_args a{static_cast<int>(p.H), static_cast<int>(p.Hkv), static_cast<int>(p.L), static_cast<int>(p.S),
                            p.mask, p.ms[0], p.ms[1], p.ms[2], p.ms[3], p.scale, p.scale * log2_e, p.causal,
                            backward_folds_interior()};
  constexpr int dkdv_bytes = dkdv_mma_shared_bytes<T, D>(), dq_bytes = dq_mma_shared_bytes<T, D>();
  allow_shared(flash_backward_dkdv_mma_kernel<T, D>, dkdv_bytes, "cudaFuncSetAttribute (dK, dV)");
  allow_shared(flash_backward_dq_mma_kernel<T, D>, dq_bytes, "cudaFuncSetAttribute (dQ)");
  constexpr int rows = 16 * mma_backward_warps;
  flash_backward_dkdv_mma_kernel<T, D><<<rows_grid_of(p.S, p.B * p.Hkv, rows), mma_backward_warps * 32, dkdv_bytes, stream>>>(
      static_cast<const T*>(p.q), static_cast<const T*>(p.k), static_cast<const T*>(p.v), static_cast<const T*>(g.grad_o),
      p.lse, delta, static_cast<T*>(g.dk), static_cast<T*>(g.dv), a);
  check_launch("the tensor-core backward's dK, dV");
  flash_backward_dq_mma_kernel<T, D><<<rows_grid_of(p.L, p.B * p.H, rows), mma_backward_warps * 32, dq_bytes, stream>>>(
      static_cast<const T*>(p.q), static_cast<const T*>(p.k), static_cast<const T*>(p.v), static_cast<const T*>(g.grad_o),
      p.lse, delta, static_cast<T*>(g.dq), a);
  check_launch("the tensor-core backward's dQ");
}

// The wgmma backward's shape: warpgroups a block of its dK/dV kernel and of its dQ kernel (0:
// the mma.sync backward). On Hopper at D = 64 and 128 it is the default, two and two: forward +
// backward 270, 200, 183, 145, 239 and 179 TFLOP/s at 1,4096,16,128, 4,2048,16,64 and
// 8,1024,32,128, full and causal, against 193, 153, 158, 132, 180 and 148 for mma.sync (bf16,
// H200, 2026-11-26, one run: bench/gpu/h200-2026-11-26-wgmma-backward.txt); one and one from 8%
// slower to 2% faster; two and three (dQ at 168 registers, spilling 88 bytes) 1–2.4% faster on
// five shapes and 0.9% slower on one, but only the device tests' 16-bit subset ran on it, where
// two and two passed all of them.
// ATTN_CUDA_BACKWARD=mma|wgmma11|wgmma22|wgmma23 forces one (for the tests and for timing).
struct backward_shape {
  int dkdv_groups, dq_groups;
};
backward_shape choose_backward(const attention_problem& p) {
  static const std::string forced = [] {
    const char* env = std::getenv("ATTN_CUDA_BACKWARD");
    return std::string(env != nullptr ? env : "");
  }();
  backward_shape choice{2, 2};
  if (!forced.empty()) {
    if (forced == "mma") return {0, 0};
    if (forced != "wgmma11" && forced != "wgmma22" && forced != "wgmma23")
      throw std::runtime_error("ATTN_CUDA_BACKWARD=" + forced + ": expected mma, wgmma11, wgmma22 or wgmma23");
    choice = {forced[5] - '0', forced[6] - '0'};
  }
  if ((p.D != 64 && p.D != 128) || !wgmma_forward_available()) return {0, 0};
  return choice;
}

template <typename T, int D, int DKDV, int DQ>
void launch_wgmma_backward(const attention_problem& p, const attention_gradients& g, const float* delta,
                           cudaStream_t stream) {
  const mma_backward_args a{static_cast<int>(p.H), static_cast<int>(p.Hkv), static_cast<int>(p.L), static_cast<int>(p.S),
                            p.mask, p.ms[0], p.ms[1], p.ms[2], p.ms[3], p.scale, p.scale * log2_e, p.causal,
                            backward_folds_interior()};
  constexpr int dkdv_bytes = dkdv_wgmma_shared_bytes<D, DKDV>(), dq_bytes = dq_wgmma_shared_bytes<D, DQ>();
  allow_shared(flash_backward_dkdv_wgmma_kernel<T, D, DKDV>, dkdv_bytes, "cudaFuncSetAttribute (wgmma dK, dV)");
  allow_shared(flash_backward_dq_wgmma_kernel<T, D, DQ>, dq_bytes, "cudaFuncSetAttribute (wgmma dQ)");
  flash_backward_dkdv_wgmma_kernel<T, D, DKDV><<<rows_grid_of(p.S, p.B * p.Hkv, 64 * DKDV), 128 * DKDV, dkdv_bytes, stream>>>(
      static_cast<const T*>(p.q), static_cast<const T*>(p.k), static_cast<const T*>(p.v), static_cast<const T*>(g.grad_o),
      p.lse, delta, static_cast<T*>(g.dk), static_cast<T*>(g.dv), a);
  check_launch("the wgmma backward's dK, dV");
  flash_backward_dq_wgmma_kernel<T, D, DQ><<<rows_grid_of(p.L, p.B * p.H, 64 * DQ), 128 * DQ, dq_bytes, stream>>>(
      static_cast<const T*>(p.q), static_cast<const T*>(p.k), static_cast<const T*>(p.v), static_cast<const T*>(g.grad_o),
      p.lse, delta, static_cast<T*>(g.dq), a);
  check_launch("the wgmma backward's dQ");
}

template <typename T, int D>
void launch_wgmma_backward_shaped(const attention_problem& p, const attention_gradients& g, const float* delta,
                                  backward_shape shape, cudaStream_t stream) {
  if (shape.dkdv_groups == 1) return launch_wgmma_backward<T, D, 1, 1>(p, g, delta, stream);
  if (shape.dq_groups == 3) return launch_wgmma_backward<T, D, 2, 3>(p, g, delta, stream);
  launch_wgmma_backward<T, D, 2, 2>(p, g, delta, stream);
}

template <typename T>
void launch_mma_backward_typed(const attention_problem& p, const attention_gradients& g, const float* delta,
                               cudaStream_t stream) {
  const backward_shape shape = choose_backward(p);
  if (shape.dkdv_groups > 0) {
    if (p.D == 64) return launch_wgmma_backward_shaped<T, 64>(p, g, delta, shape, stream);
    return launch_wgmma_backward_shaped<T, 128>(p, g, delta, shape, stream);
  }
  switch (p.D) {
    case 32: return launch_mma_backward<T, 32>(p, g, delta, stream);
    case 64: return launch_mma_backward<T, 64>(p, g, delta, stream);
    case 96: return launch_mma_backward<T, 96>(p, g, delta, stream);
    default: return launch_mma_backward<T, 128>(p, g, delta, stream);
  }
}

// The smallest register width that holds both head dimensions.
template <template <typename, int> class Launch, typename T, typename... Args>
void by_width(const attention_problem& p, Args&&... args) {
  const int64_t d = p.D > p.Dv ? p.D : p.Dv;
  if (d <= 32) return Launch<T, 32>::run(p, args...);
  if (d <= 64) return Launch<T, 64>::run(p, args...);
  if (d <= 128) return Launch<T, 128>::run(p, args...);
  return Launch<T, 256>::run(p, args...);
}

template <typename T, int DMAX> struct forward_launch {
  static void run(const attention_problem& p, cudaStream_t s) { launch_cores_forward<T, DMAX>(p, s); }
};
template <typename T, int DMAX> struct backward_launch {
  static void run(const attention_problem& p, const attention_gradients& g, float* w, cudaStream_t s) {
    launch_cores_backward<T, DMAX>(p, g, w, s);
  }
};

}  // namespace

const char* forward_path(const attention_problem& p) {
  if (!tensor_core_shape(p)) return "CUDA cores (float32)";
  try {  // a label: an ATTN_CUDA_FORWARD that is not understood is reported by the launch itself
    if (forward_runs_wgmma(p)) return "tensor cores (wgmma m64nNk16, float32 accumulation)";
  } catch (const std::exception&) {
    return "tensor cores (ATTN_CUDA_FORWARD not understood)";
  }
  return "tensor cores (mma.sync m16n8k16, float32 accumulation)";
}

void flash_forward(const attention_problem& p, void* stream_ptr) {
  auto stream = static_cast<cudaStream_t>(stream_ptr);
  if (p.B * p.H * p.L == 0) return;
  if (p.D > 256 || p.Dv > 256) throw std::runtime_error("head dimensions above 256 are not supported on CUDA");
  check_grid(p);
  if (tensor_core_ready(p)) {
    return launch_forward_tensor_cores(p, stream);
  }
  switch (p.type) {
    case element::float32: return by_width<forward_launch, float>(p, stream);
    case element::bf16: return by_width<forward_launch, __nv_bfloat16>(p, stream);
    case element::float16: return by_width<forward_launch, __half>(p, stream);
  }
}

void flash_backward(const attention_problem& p, const attention_gradients& g, float* workspace, void* stream_ptr) {
  auto stream = static_cast<cudaStream_t>(stream_ptr);
  if (p.D > 256 || p.Dv > 256) throw std::runtime_error("head dimensions above 256 are not supported on CUDA");
  if (p.B * p.H * p.L == 0 || p.S == 0) {  // nothing attends: every gradient is 0
    const size_t bytes = p.type == element::float32 ? 4 : 2;
    for (auto [ptr, n] : {std::pair{g.dq, p.B * p.H * p.L * p.D}, std::pair{g.dk, p.B * p.Hkv * p.S * p.D},
                          std::pair{g.dv, p.B * p.Hkv * p.S * p.Dv}}) {
      const cudaError_t e = n > 0 ? cudaMemsetAsync(ptr, 0, static_cast<size_t>(n) * bytes, stream) : cudaSuccess;
      if (e != cudaSuccess) throw std::runtime_error(std::string("zeroing the gradients: ") + cudaGetErrorString(e));
    }
    return;
  }
  check_grid(p);
  launch_row_delta(p, g, workspace, stream);
  if (tensor_core_ready(p, &g)) {
    if (p.type == element::bf16) return launch_mma_backward_typed<__nv_bfloat16>(p, g, workspace, stream);
    return launch_mma_backward_typed<__half>(p, g, workspace, stream);
  }
  switch (p.type) {
    case element::float32: return by_width<backward_launch, float>(p, g, workspace, stream);
    case element::bf16: return by_width<backward_launch, __nv_bfloat16>(p, g, workspace, stream);
    case element::float16: return by_width<backward_launch, __half>(p, g, workspace, stream);
  }
}

}  // namespace attn::cuda_kernels
