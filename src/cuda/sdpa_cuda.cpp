// attn::cuda: host tensors to the CUDA kernels and back (conversions, the problem's
// description), the device's name and the precisions' names.
#include "attn/cuda.hpp"

#include <cuda_runtime.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <vector>

#include "attn/error.hpp"
#include "cuda/cuda_problem.hpp"
#include "cuda/device_buffer.hpp"
#include "kernels/sdpa_problem.hpp"

namespace attn::cuda {

using namespace detail;

namespace {

// float16 holds magnitudes up to 65504: a larger value would become inf on the way in.
void check_float16_range(const tensor& c, precision p, const char* name) {
  if (p != precision::float16) return;
  float largest = 0;
  for (float x : c.values()) largest = std::max(largest, std::abs(x));
  if (largest > 65504.0f)
    throw_usage(fmt::format("{} holds {:.6g}, past float16's largest value (65504): use bf16 or float32", name, largest));
}

// A float32 host tensor on the device in the element type (dense, row-major).
struct device_tensor {
  device_buffer data;
  device_tensor(const tensor& t, precision p, const char* name) : data(static_cast<size_t>(t.numel()) * element_bytes(p)) {
    const tensor c = t.contiguous();
    check_float16_range(c, p, name);
    device_buffer staging(static_cast<size_t>(c.numel()) * sizeof(float));
    check(cudaMemcpy(staging.get(), c.data(), c.numel() * sizeof(float), cudaMemcpyHostToDevice), "copy to the device");
    run_kernels([&] { cuda_kernels::convert_from_float(to_element(p), staging.floats(), data.get(), c.numel(), nullptr); });
    check(cudaDeviceSynchronize(), "converting the inputs");
  }
};

tensor to_host(const void* src, precision p, const shape_t& shape) {
  tensor out = tensor::uninitialized(shape);
  device_buffer staging(static_cast<size_t>(out.numel()) * sizeof(float));
  run_kernels([&] { cuda_kernels::convert_to_float(to_element(p), src, staging.floats(), out.numel(), nullptr); });
  check(cudaMemcpy(out.data(), staging.get(), out.numel() * sizeof(float), cudaMemcpyDeviceToHost), "copy from the device");
  return out;
}

void check_options(const sdpa_options& options) {
  if (options.kernel == sdpa_kernel::reference)
    throw_usage("the float64 reference kernel runs on the cpu only (attn::ref::sdpa)");
}

// What both directions put on the device: q, k, v in the precision and the mask, with the
// problem's sizes, scale and mask strides as the CPU kernels see them (describe_problem) and
// pointers to the device copies. Each input is made contiguous once.
struct device_inputs {
  tensor q, k, v, mask;  // contiguous host tensors (mask empty when there is none)
  cuda_kernels::attention_problem problem;
  device_tensor q_dev, k_dev, v_dev;
  device_buffer mask_dev;

  device_inputs(const tensor& q_in, const tensor& k_in, const tensor& v_in, const sdpa_options& options, precision p)
      : q(q_in.contiguous()), k(k_in.contiguous()), v(v_in.contiguous()),
        mask(options.attn_mask != nullptr ? options.attn_mask->contiguous() : tensor()),
        problem(describe(options, p)), q_dev(q, p, "q"), k_dev(k, p, "k"), v_dev(v, p, "v"),
        mask_dev(mask.empty() ? 0 : static_cast<size_t>(mask.numel()) * sizeof(float)) {
    if (!mask.empty())
      check(cudaMemcpy(mask_dev.get(), mask.data(), mask.numel() * sizeof(float), cudaMemcpyHostToDevice), "copy the mask");
    problem.q = q_dev.data.get(), problem.k = k_dev.data.get(), problem.v = v_dev.data.get();
    problem.mask = mask.empty() ? nullptr : mask_dev.floats();
  }

 private:
  cuda_kernels::attention_problem describe(const sdpa_options& options, precision p) const {
    sdpa_options o = options;
    o.attn_mask = mask.empty() ? nullptr : &mask;
    const kernels::flash_problem f = kernels::describe_problem(q, k, v, o);
    cuda_kernels::attention_problem d;
    d.B = f.B, d.H = f.H, d.Hkv = f.Hkv, d.L = f.L, d.S = f.S, d.D = f.D, d.Dv = f.Dv;
    for (int i = 0; i < 4; ++i) d.ms[i] = f.ms[i];
    d.causal = f.causal;
    d.scale = f.scale;
    d.type = to_element(p);
    return d;
  }
};

}  // namespace

void check_shapes(const tensor& q, const tensor& k, const tensor& v, const tensor* mask) {
  check_sdpa_shapes(q, k, v, mask);
  check_launch_limits(q.dim(0) * q.dim(1), std::max(q.dim(2), k.dim(2)), q.dim(3), v.dim(3));
}

bool built() { return true; }

bool available() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

std::string device_name() {
  require_device();
  int device = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
  return fmt::format("{}, sm_{}{}, {} multiprocessors", prop.name, prop.major, prop.minor, prop.multiProcessorCount);
}

precision parse_precision(const std::string& name) {
  if (name == "float32" || name == "fp32" || name == "f32") return precision::float32;
  if (name == "bf16" || name == "bfloat16") return precision::bf16;
  if (name == "float16" || name == "fp16" || name == "half") return precision::float16;
  throw_usage(fmt::format("precision '{}': expected float32, bf16 or float16", name));
}

const char* precision_name(precision p) {
  switch (p) {
    case precision::float32: return "float32";
    case precision::bf16: return "bf16";
    case precision::float16: return "float16";
  }
  return "?";
}

std::string forward_path(precision p, int64_t head_dim, int64_t value_dim) {
  cuda_kernels::attention_problem d;
  d.type = to_element(p);
  d.D = head_dim;
  d.Dv = value_dim;
  return cuda_kernels::forward_path(d);
}

tensor sdpa(const tensor& q, const tensor& k, const tensor& v, const sdpa_options& options, precision p,
            tensor* lse_out) {
  check_shapes(q, k, v, options.attn_mask);
  check_options(options);
  require_device();
  device_inputs in(q, k, v, options, p);
  cuda_kernels::attention_problem& d = in.problem;
  device_buffer dout(static_cast<size_t>(d.B * d.H * d.L * d.Dv) * element_bytes(p));
  device_buffer dlse(static_cast<size_t>(d.B * d.H * d.L) * sizeof(float));
  d.o = dout.get(), d.lse = dlse.floats();
  run_kernels([&] { cuda_kernels::flash_forward(d, nullptr); });
  check(cudaDeviceSynchronize(), "the forward");
  if (lse_out != nullptr) {
    *lse_out = tensor::uninitialized({d.B, d.H, d.L});
    check(cudaMemcpy(lse_out->data(), dlse.get(), d.B * d.H * d.L * sizeof(float), cudaMemcpyDeviceToHost), "copy lse");
  }
  return to_host(dout.get(), p, {d.B, d.H, d.L, d.Dv});
}

sdpa_gradients sdpa_backward(const tensor& q, const tensor& k, const tensor& v, const tensor& o,
                             const tensor& lse, const tensor& grad_o, const sdpa_options& options,
                             precision p) {
  check_shapes(q, k, v, options.attn_mask);
  check_options(options);
  const shape_t out_shape = {q.dim(0), q.dim(1), q.dim(2), v.dim(3)};
  if (o.shape() != out_shape || grad_o.shape() != out_shape)
    throw_usage(fmt::format("o and grad_o must have the output's shape {}", shape_to_string(out_shape)));
  if (lse.shape() != shape_t{q.dim(0), q.dim(1), q.dim(2)})
    throw_usage(fmt::format("lse must have shape [B, H, L], got {}", shape_to_string(lse.shape())));
  require_device();
  device_inputs in(q, k, v, options, p);
  cuda_kernels::attention_problem& d = in.problem;
  const device_tensor o_dev(o, p, "o"), grad_o_dev(grad_o, p, "grad_o");
  const tensor lse_c = lse.contiguous();
  device_buffer dlse(static_cast<size_t>(lse_c.numel()) * sizeof(float));
  check(cudaMemcpy(dlse.get(), lse_c.data(), lse_c.numel() * sizeof(float), cudaMemcpyHostToDevice), "copy lse");
  device_buffer grad_q(static_cast<size_t>(q.numel()) * element_bytes(p)),
      grad_k(static_cast<size_t>(k.numel()) * element_bytes(p)), grad_v(static_cast<size_t>(v.numel()) * element_bytes(p)),
      workspace(static_cast<size_t>(d.B * d.H * d.L) * sizeof(float));
  d.o = o_dev.data.get(), d.lse = dlse.floats();
  const cuda_kernels::attention_gradients g{grad_o_dev.data.get(), grad_q.get(), grad_k.get(), grad_v.get()};
  run_kernels([&] { cuda_kernels::flash_backward(d, g, workspace.floats(), nullptr); });
  check(cudaDeviceSynchronize(), "the backward");
  return {to_host(grad_q.get(), p, q.shape()), to_host(grad_k.get(), p, k.shape()), to_host(grad_v.get(), p, v.shape())};
}

}  // namespace attn::cuda
