// attn::cuda::time_sdpa: the kernels timed by CUDA events on device-resident random inputs
// (what `attn bench --device cuda` prints).
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "attn/cuda.hpp"
#include "attn/error.hpp"
#include "cuda/cuda_problem.hpp"
#include "cuda/device_buffer.hpp"

namespace attn::cuda {

using namespace detail;

timing time_sdpa(int64_t B, int64_t H, int64_t L, int64_t D, bool causal, precision p, int repeats, bool backward) {
  require_device();
  if (B < 1 || H < 1 || L < 1 || D < 1) throw_usage("time_sdpa: sizes must be positive");
  check_launch_limits(B * H, L, D, D);
  repeats = std::max(repeats, 1);
  const int64_t n = B * H * L * D;
  const size_t bytes = static_cast<size_t>(n) * element_bytes(p);
  device_buffer q(bytes), k(bytes), v(bytes), o(bytes), go(bytes), gq(bytes), gk(bytes), gv(bytes);
  device_buffer lse(static_cast<size_t>(B * H * L) * sizeof(float)), workspace(static_cast<size_t>(B * H * L) * sizeof(float));
  run_kernels([&] {
    cuda_kernels::fill_uniform(to_element(p), q.get(), n, 1, nullptr);
    cuda_kernels::fill_uniform(to_element(p), k.get(), n, 2, nullptr);
    cuda_kernels::fill_uniform(to_element(p), v.get(), n, 3, nullptr);
    cuda_kernels::fill_uniform(to_element(p), go.get(), n, 4, nullptr);
  });
  cuda_kernels::attention_problem d;
  d.B = B, d.H = H, d.Hkv = H, d.L = L, d.S = L, d.D = D, d.Dv = D;
  d.q = q.get(), d.k = k.get(), d.v = v.get(), d.o = o.get(), d.lse = lse.floats();
  d.causal = causal;
  d.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(D)));
  d.type = to_element(p);
  const cuda_kernels::attention_gradients g{go.get(), gq.get(), gk.get(), gv.get()};
  const device_event start, stop;
  auto median_of = [&](auto&& body) {
    for (int w = 0; w < 3; ++w) run_kernels(body);
    std::vector<double> seconds;
    for (int r = 0; r < repeats; ++r) {
      check(cudaEventRecord(start.get()), "cudaEventRecord");
      run_kernels(body);
      check(cudaEventRecord(stop.get()), "cudaEventRecord");
      check(cudaEventSynchronize(stop.get()), "the timed kernels");
      float ms = 0;
      check(cudaEventElapsedTime(&ms, start.get(), stop.get()), "cudaEventElapsedTime");
      seconds.push_back(ms * 1e-3);
    }
    std::sort(seconds.begin(), seconds.end());
    return seconds[seconds.size() / 2];
  };
  timing t;
  t.forward_s = median_of([&] { cuda_kernels::flash_forward(d, nullptr); });
  if (backward)
    t.forward_backward_s = median_of([&] {
      cuda_kernels::flash_forward(d, nullptr);
      cuda_kernels::flash_backward(d, g, workspace.floats(), nullptr);
    });
  return t;
}

}  // namespace attn::cuda
