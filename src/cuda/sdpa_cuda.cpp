// attn::cuda: host tensors to the CUDA kernels and back (device buffers, conversions, the
// problem's description), the device's name, and the kernels' timing.
#include "attn/cuda.hpp"

#include <cuda_runtime.h>
#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "attn/error.hpp"
#include "cuda/cuda_problem.hpp"
#include "kernels/sdpa_problem.hpp"

namespace attn::cuda {

namespace {

using cuda_kernels::element;

void check(cudaError_t e, const char* what) {
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

void require_device() {
  if (!available()) throw_usage("no CUDA device answers on this machine (--device cuda needs one)");
}

element to_element(precision p) {
  switch (p) {
    case precision::float32: return element::float32;
    case precision::bf16: return element::bf16;
    case precision::float16: return element::float16;
  }
  return element::float32;
}

size_t element_bytes(precision p) { return p == precision::float32 ? 4 : 2; }

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

// A float32 host tensor on the device in the element type (dense, row-major).
struct device_tensor {
  device_buffer data;
  device_tensor(const tensor& t, precision p) : data(static_cast<size_t>(t.numel()) * element_bytes(p)) {
    const tensor c = t.contiguous();
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

void check_head_dims(const tensor& q, const tensor& v) {
  if (q.dim(3) > 256 || v.dim(3) > 256)
    throw_usage(fmt::format("head dimensions above 256 (D = {}, Dv = {}) are not supported on CUDA", q.dim(3), v.dim(3)));
}

// The problem on the device: sizes, scale and the mask's broadcast strides as the CPU kernels
// see them (describe_problem), pointers to the device copies.
cuda_kernels::attention_problem describe(const tensor& q, const tensor& k, const tensor& v,
                                         const sdpa_options& options, precision p, const tensor* mask_c) {
  const tensor qc = q.contiguous(), kc = k.contiguous(), vc = v.contiguous();
  sdpa_options o = options;
  o.attn_mask = mask_c;
  const kernels::flash_problem f = kernels::describe_problem(qc, kc, vc, o);
  cuda_kernels::attention_problem d;
  d.B = f.B, d.H = f.H, d.Hkv = f.Hkv, d.L = f.L, d.S = f.S, d.D = f.D, d.Dv = f.Dv;
  for (int i = 0; i < 4; ++i) d.ms[i] = f.ms[i];
  d.causal = f.causal;
  d.scale = f.scale;
  d.type = to_element(p);
  return d;
}

}  // namespace

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
  check_sdpa_shapes(q, k, v, options.attn_mask);
  check_head_dims(q, v);
  require_device();
  std::optional<tensor> mask_c;
  if (options.attn_mask != nullptr) mask_c = options.attn_mask->contiguous();
  cuda_kernels::attention_problem d = describe(q, k, v, options, p, mask_c ? &*mask_c : nullptr);
  const device_tensor dq(q, p), dk(k, p), dv(v, p);
  device_buffer dmask(mask_c ? static_cast<size_t>(mask_c->numel()) * sizeof(float) : 0);
  if (mask_c)
    check(cudaMemcpy(dmask.get(), mask_c->data(), mask_c->numel() * sizeof(float), cudaMemcpyHostToDevice), "copy the mask");
  device_buffer dout(static_cast<size_t>(d.B * d.H * d.L * d.Dv) * element_bytes(p));
  device_buffer dlse(static_cast<size_t>(d.B * d.H * d.L) * sizeof(float));
  d.q = dq.data.get(), d.k = dk.data.get(), d.v = dv.data.get(), d.o = dout.get(), d.lse = dlse.floats();
  d.mask = mask_c ? dmask.floats() : nullptr;
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
  check_sdpa_shapes(q, k, v, options.attn_mask);
  check_head_dims(q, v);
  const shape_t out_shape = {q.dim(0), q.dim(1), q.dim(2), v.dim(3)};
  if (o.shape() != out_shape || grad_o.shape() != out_shape)
    throw_usage(fmt::format("o and grad_o must have the output's shape {}", shape_to_string(out_shape)));
  if (lse.shape() != shape_t{q.dim(0), q.dim(1), q.dim(2)})
    throw_usage(fmt::format("lse must have shape [B, H, L], got {}", shape_to_string(lse.shape())));
  require_device();
  std::optional<tensor> mask_c;
  if (options.attn_mask != nullptr) mask_c = options.attn_mask->contiguous();
  cuda_kernels::attention_problem d = describe(q, k, v, options, p, mask_c ? &*mask_c : nullptr);
  const device_tensor dq_in(q, p), dk_in(k, p), dv_in(v, p), do_(o, p), dgo(grad_o, p);
  device_buffer dmask(mask_c ? static_cast<size_t>(mask_c->numel()) * sizeof(float) : 0);
  if (mask_c)
    check(cudaMemcpy(dmask.get(), mask_c->data(), mask_c->numel() * sizeof(float), cudaMemcpyHostToDevice), "copy the mask");
  const tensor lse_c = lse.contiguous();
  device_buffer dlse(static_cast<size_t>(lse_c.numel()) * sizeof(float));
  check(cudaMemcpy(dlse.get(), lse_c.data(), lse_c.numel() * sizeof(float), cudaMemcpyHostToDevice), "copy lse");
  device_buffer gq(static_cast<size_t>(q.numel()) * element_bytes(p)), gk(static_cast<size_t>(k.numel()) * element_bytes(p)),
      gv(static_cast<size_t>(v.numel()) * element_bytes(p)), workspace(static_cast<size_t>(d.B * d.H * d.L) * sizeof(float));
  d.q = dq_in.data.get(), d.k = dk_in.data.get(), d.v = dv_in.data.get(), d.o = do_.data.get(), d.lse = dlse.floats();
  d.mask = mask_c ? dmask.floats() : nullptr;
  const cuda_kernels::attention_gradients g{dgo.data.get(), gq.get(), gk.get(), gv.get()};
  run_kernels([&] { cuda_kernels::flash_backward(d, g, workspace.floats(), nullptr); });
  check(cudaDeviceSynchronize(), "the backward");
  return {to_host(gq.get(), p, q.shape()), to_host(gk.get(), p, k.shape()), to_host(gv.get(), p, v.shape())};
}

timing time_sdpa(int64_t B, int64_t H, int64_t L, int64_t D, bool causal, precision p, int repeats, bool backward) {
  require_device();
  if (B < 1 || H < 1 || L < 1 || D < 1 || D > 256) throw_usage("time_sdpa: sizes must be positive, D at most 256");
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
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  auto median_of = [&](auto&& body) {
    for (int w = 0; w < 3; ++w) run_kernels(body);
    std::vector<double> seconds;
    for (int r = 0; r < repeats; ++r) {
      check(cudaEventRecord(start), "cudaEventRecord");
      run_kernels(body);
      check(cudaEventRecord(stop), "cudaEventRecord");
      check(cudaEventSynchronize(stop), "the timed kernels");
      float ms = 0;
      check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
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
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return t;
}

}  // namespace attn::cuda
