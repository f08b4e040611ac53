// attn::cuda::mha: nn.MultiheadAttention's forward on the GPU, the CPU layer's checks and masks
// (multihead_attention::checked_mask), its projections in float32 (projection.cu), the heads in
// the precision for the fused attention (flash_dispatch.cu), the output projection in float32.
#include <cuda_runtime.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <tuple>
#include <vector>

#include "attn/cuda.hpp"
#include "attn/error.hpp"
#include "attn/multihead_attention.hpp"
#include "cuda/cuda_problem.hpp"
#include "cuda/device_buffer.hpp"
#include "cuda/projection.hpp"

namespace attn::cuda {

using namespace detail;

namespace {

// A float32 host tensor's values on the device (none for an empty tensor: a missing bias).
struct device_floats {
  device_buffer data;
  explicit device_floats(const tensor& t) : data(t.empty() ? 0 : static_cast<size_t>(t.numel()) * sizeof(float)) {
    if (t.empty()) return;
    const tensor c = t.contiguous();
    check(cudaMemcpy(data.get(), c.data(), c.numel() * sizeof(float), cudaMemcpyHostToDevice), "copy to the device");
  }
  const float* get() const { return static_cast<const float*>(data.get()); }
};

}  // namespace

tensor mha(const multihead_attention& m, const tensor& query, const tensor& key, const tensor& value,
           const mha_options& options, precision p) {
  const tensor mask = m.checked_mask(query, key, value, options);
  const int64_t E = m.embed_dim(), H = m.num_heads(), hd = m.head_dim();
  const int64_t B = query.dim(0), L = query.dim(1), S = key.dim(1);
  check_launch_limits(B * H, std::max(L, S), hd, hd);
  require_device();

  const device_floats xq(query), xk(key), xv(value);
  const device_floats wq(m.q_weight()), wk(m.k_weight()), wv(m.v_weight()), wo(m.out_weight());
  const device_floats bq(m.q_bias()), bk(m.k_bias()), bv(m.v_bias()), bo(m.out_bias());
  const auto floats = [](int64_t n) { return device_buffer(static_cast<size_t>(n) * sizeof(float)); };
  const auto elements = [&](int64_t n) { return device_buffer(static_cast<size_t>(n) * element_bytes(p)); };
  device_buffer yq = floats(B * L * E), yk = floats(B * S * E), yv = floats(B * S * E);
  device_buffer qh = elements(B * H * L * hd), kh = elements(B * H * S * hd), vh = elements(B * H * S * hd);
  device_buffer oh = elements(B * H * L * hd), lse = floats(B * H * L), merged = floats(B * L * E), out = floats(B * L * E);

  // The mask as the kernels read it: [B, H, L, S] by strides, 0 along a broadcast dimension.
  const tensor mc = mask.empty() ? tensor() : mask.contiguous();
  const device_floats mask_dev(mc);
  cuda_kernels::attention_problem d;
  d.B = B, d.H = H, d.Hkv = H, d.L = L, d.S = S, d.D = hd, d.Dv = hd;
  d.q = qh.get(), d.k = kh.get(), d.v = vh.get(), d.o = oh.get(), d.lse = lse.floats();
  d.causal = options.causal;
  d.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(hd)));
  d.type = to_element(p);
  if (!mc.empty()) {
    const shape_t full = {B, H, L, S};
    shape_t shape = mc.shape();
    while (shape.size() < 4) shape.insert(shape.begin(), 1);  // [L, S] → [1, 1, L, S]
    int64_t stride = 1;
    for (int i = 3; i >= 0; --i) {
      d.ms[i] = shape[static_cast<size_t>(i)] == 1 && full[static_cast<size_t>(i)] != 1 ? 0 : stride;
      stride *= shape[static_cast<size_t>(i)];
    }
    d.mask = mask_dev.get();
  }

  run_kernels([&] {
    using namespace cuda_kernels;
    linear_rows(xq.get(), wq.get(), bq.get(), yq.floats(), B * L, E, m.embed_dim(), nullptr);
    linear_rows(xk.get(), wk.get(), bk.get(), yk.floats(), B * S, E, m.kdim(), nullptr);
    linear_rows(xv.get(), wv.get(), bv.get(), yv.floats(), B * S, E, m.vdim(), nullptr);
  });
  if (p == precision::float16) {  // the heads are rounded to float16: past ±65504 they would be inf
    check(cudaDeviceSynchronize(), "the projections");
    for (auto [rows, n, name] : {std::tuple{&yq, B * L, "query"}, std::tuple{&yk, B * S, "key"},
                                 std::tuple{&yv, B * S, "value"}}) {
      std::vector<float> host(static_cast<size_t>(n * E));
      if (!host.empty())
        check(cudaMemcpy(host.data(), rows->get(), host.size() * sizeof(float), cudaMemcpyDeviceToHost), "copy from the device");
      float largest = 0;
      for (float x : host) largest = std::max(largest, std::abs(x));
      if (!(largest <= 65504.0f))
        throw_usage(fmt::format("the projected {} holds {:.6g}, past float16's largest value (65504): use bf16 or float32",
                                name, largest));
    }
  }
  run_kernels([&] {
    using namespace cuda_kernels;
    split_heads(d.type, yq.floats(), qh.get(), B, L, H, hd, nullptr);
    split_heads(d.type, yk.floats(), kh.get(), B, S, H, hd, nullptr);
    split_heads(d.type, yv.floats(), vh.get(), B, S, H, hd, nullptr);
    flash_forward(d, nullptr);
    merge_heads(d.type, oh.get(), merged.floats(), B, L, H, hd, nullptr);
    linear_rows(merged.floats(), wo.get(), bo.get(), out.floats(), B * L, E, E, nullptr);
  });
  check(cudaDeviceSynchronize(), "the layer");
  tensor y = tensor::uninitialized({B, L, E});
  if (y.numel() > 0)
    check(cudaMemcpy(y.data(), out.get(), y.numel() * sizeof(float), cudaMemcpyDeviceToHost), "copy from the device");
  return y;
}

}  // namespace attn::cuda
