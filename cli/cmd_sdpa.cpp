// attn sdpa: scaled dot-product attention on .npy tensors (or one-tensor .safetensors files,
// whose BF16 data comes in exactly), like PyTorch's scaled_dot_product_attention (bool masks:
// True = takes part).
#include <fmt/format.h>
#include <cmath>

#include <memory>
#include <optional>

#include "attn/cuda.hpp"
#include "attn/error.hpp"
#include "attn/sdpa.hpp"
#include "attn/sdpa_backward.hpp"
#include "cli_common.hpp"
#include "file_roles.hpp"

namespace attn::cli {

namespace {

struct sdpa_args {
  std::string query, key, value, attn_mask, output, weights_output, scale = "sqrt";
  std::string grad_output, dq, dk, dv;  // the backward: dL/do in, dL/dq, dL/dk, dL/dv out
  std::string kernel = "fused", dtype = "float32", device = "cpu";
  bool causal = false;
};

bool all_finite(const tensor& t) {
  for (float x : t.contiguous().values())
    if (!std::isfinite(x)) return false;
  return true;
}

// Finite inputs that give a non-finite result overflowed float32 in the scores (values near
// 1e19 and beyond, where the library's scale check does not look): an error, never NaN with
// success. Inputs that hold NaN give NaN, as PyTorch's do.
void check_finite_result(const std::vector<const tensor*>& inputs, const tensor& out,
                         const std::string& path) {
  for (const tensor* t : inputs)
    if (!all_finite(*t)) return;
  if (!all_finite(out))
    throw_input(path, "the scores overflow float32 (|scale·q·k| past 3.4e38): the result is not "
                      "finite; use a smaller --scale or --kernel reference");
}

void run(const sdpa_args& args) {
  if (args.device != "cpu" && args.device != "cuda")
    throw_usage(fmt::format("--device '{}': expected cpu or cuda", args.device));
  const bool on_gpu = args.device == "cuda";
  if (on_gpu && args.kernel != "fused") throw_usage("--device cuda runs the fused kernels only (no --kernel reference)");
  if (on_gpu && !args.weights_output.empty())
    throw_usage("--device cuda does not form the weights (--attn-weights-out): run it on the cpu");
  std::optional<cuda::precision> gpu_precision;
  if (on_gpu) gpu_precision = cuda::parse_precision(args.dtype);
  sdpa_options options;
  options.causal = args.causal;
  options.scale = scale_spec::parse(args.scale);
  if (args.kernel != "fused" && args.kernel != "reference")
    throw_usage(fmt::format("--kernel '{}': expected fused or reference", args.kernel));
  options.kernel = args.kernel == "reference" ? sdpa_kernel::reference : sdpa_kernel::fused;
  if (!on_gpu) options.dtype = parse_sdpa_dtype(args.dtype);
  const tensor q = read_float_tensor(args.query, "the query");
  const tensor k = read_float_tensor(args.key, "the key");
  const tensor v = read_float_tensor(args.value, "the value");
  for (auto [t, path, name] : {std::tuple{&q, args.query, "the query"},
                                std::tuple{&k, args.key, "the key"},
                                std::tuple{&v, args.value, "the value"}})
    if (t->rank() != 4)
      throw_input(path, fmt::format("{} must have rank 4 ([B, H, L, D] / [B, Hkv, S, D]), got {}",
                                    name, shape_to_string(t->shape())));
  std::optional<tensor> mask;
  if (!args.attn_mask.empty()) {
    mask = read_mask_npy(args.attn_mask, /*keep_when=*/true);
    options.attn_mask = &*mask;
  }
  // Shapes that do not fit each other come from the files: report them as input errors.
  try {
    if (on_gpu) cuda::check_shapes(q, k, v, options.attn_mask);
    else check_sdpa_shapes(q, k, v, options.attn_mask);
  } catch (const error& e) {
    throw_input(args.query, e.problem(), e.where());
  }
  // The backward: all of --grad-output, --dq, --dk, --dv, or none of them.
  const bool backward = !args.grad_output.empty();
  if (backward != !args.dq.empty() || backward != !args.dk.empty() || backward != !args.dv.empty())
    throw_usage("--grad-output, --dq, --dk and --dv go together: give all four or none");
  std::optional<tensor> grad_o;
  if (backward) {
    grad_o = read_float_tensor(args.grad_output, "the output gradient");
    const shape_t want = {q.dim(0), q.dim(1), q.dim(2), v.dim(3)};
    if (grad_o->shape() != want)
      throw_input(args.grad_output,
                  fmt::format("the output gradient must have the output's shape {}, got {}",
                              shape_to_string(want), shape_to_string(grad_o->shape())));
  }
  tensor weights, lse;
  tensor out = on_gpu     ? cuda::sdpa(q, k, v, options, *gpu_precision, &lse)
               : backward ? sdpa_forward(q, k, v, options, lse)
                          : sdpa(q, k, v, options, args.weights_output.empty() ? nullptr : &weights);
  if (backward && !args.weights_output.empty()) sdpa(q, k, v, options, &weights);
  check_finite_result({&q, &k, &v}, out, args.query);
  std::vector<std::pair<std::string, std::string>> outputs{{args.output, encode_npy(out)}};
  if (!args.weights_output.empty()) outputs.emplace_back(args.weights_output, encode_npy(weights));
  if (backward) {
    const sdpa_gradients g = on_gpu ? cuda::sdpa_backward(q, k, v, out, lse, *grad_o, options, *gpu_precision)
                                    : sdpa_backward(q, k, v, out, lse, *grad_o, options);
    outputs.emplace_back(args.dq, encode_npy(g.dq));
    outputs.emplace_back(args.dk, encode_npy(g.dk));
    outputs.emplace_back(args.dv, encode_npy(g.dv));
  }
  write_outputs(outputs);
}

}  // namespace

void add_sdpa_command(CLI::App& app) {
  auto args = std::make_shared<sdpa_args>();
  CLI::App* sub = app.add_subcommand(
      "sdpa", "Scaled dot-product attention: softmax(Q·Kᵀ·scale + mask)·V on .npy tensors");
  reads(sub->add_option("--query", args->query, "Query .npy, float32 [B, H, L, D], or a .safetensors file of that one tensor "
                  "(F32, BF16 or F16)"))->required();
  reads(sub->add_option("--key", args->key, "Key .npy or .safetensors [B, Hkv, S, D] (Hkv divides H)"))->required();
  reads(sub->add_option("--value", args->value, "Value .npy or .safetensors [B, Hkv, S, Dv]"))->required();
  sub->add_flag("--causal", args->causal, "Causal mask, top-left aligned (PyTorch's is_causal)");
  sub->add_option("--scale", args->scale, "Score scale: a number, sqrt (1/√D, default) or none");
  reads(sub->add_option("--attn-mask", args->attn_mask,
                  ".npy broadcastable to [B, H, L, S]: float (added) or bool (True = takes part)"));
  sub->add_option("--kernel", args->kernel,
                  "fused (default: tiled, online softmax) or reference (float64, the specification)");
  sub->add_option("--dtype", args->dtype,
                  "float32 (default) or bf16: Q·Kᵀ and P·V on bf16 operands with float32 accumulation "
                  "(the float32 inputs rounded to bf16 on the way in; the output is float32); with --grad-output "
                  "the backward's five products too (gradients float32)");
  sub->add_option("--device", args->device,
                  "cpu (default) or cuda: the CUDA kernels (a build with -DATTN_CUDA=ON); there --dtype is "
                  "float32, bf16 or float16, the precision of the inputs and products on the GPU (results float32)");
  writes(sub->add_option("-o,--output", args->output, "Output .npy [B, H, L, Dv]"))->required();
  add_threads_option(sub);
  writes(sub->add_option("--attn-weights-out", args->weights_output,
                  "Also write the attention weights [B, H, L, S]"));
  reads(sub->add_option("--grad-output", args->grad_output,
                  "The backward: the loss's gradient with respect to the output, .npy or "
                  ".safetensors [B, H, L, Dv]"));
  writes(sub->add_option("--dq", args->dq, "With --grad-output: write dL/dq [B, H, L, D]"));
  writes(sub->add_option("--dk", args->dk, "With --grad-output: write dL/dk [B, Hkv, S, D]"));
  writes(sub->add_option("--dv", args->dv, "With --grad-output: write dL/dv [B, Hkv, S, Dv]"));
  sub->callback([args, sub] {
    check_file_roles(*sub);
    run(*args);
  });
}

}  // namespace attn::cli
