// attn mha: nn.MultiheadAttention(batch_first=True) with weights from a safetensors file.
#include <fmt/format.h>

#include <memory>
#include <optional>

#include "attn/cuda.hpp"
#include "attn/error.hpp"
#include "attn/multihead_attention.hpp"
#include "attn/safetensors.hpp"
#include "cli_common.hpp"
#include "file_roles.hpp"

namespace attn::cli {

namespace {

struct mha_args {
  std::string weights, query, key, value, key_padding_mask, attn_mask, output, weights_output;
  std::string dtype = "float32", device = "cpu";
  int64_t heads = 0;
  bool causal = false;
};

// Checks that a file's array has the size the model expects on an axis (an input error: the
// file holds the wrong shape).
void expect_dim(const tensor& t, int axis, int64_t size, const std::string& path,
                const std::string& what) {
  if (t.dim(axis) != size)
    throw_input(path, fmt::format("{} has shape {}, expected size {} on axis {}", what,
                                  shape_to_string(t.shape()), size, axis < 0 ? t.rank() + axis : axis));
}

// Unbatched inputs [L, E] (as PyTorch allows) run as a batch of one.
tensor batched(const tensor& t, bool unbatched) {
  if (!unbatched) return t;
  shape_t shape = t.shape();
  shape.insert(shape.begin(), 1);
  return t.reshape(shape);
}

void run(const mha_args& args) {
  if (args.key.empty() != args.value.empty())
    throw_usage("--key and --value go together (give both, or neither for self-attention)");
  if (args.device != "cpu" && args.device != "cuda")
    throw_usage(fmt::format("--device '{}': expected cpu or cuda", args.device));
  const bool on_gpu = args.device == "cuda";
  if (on_gpu && !args.weights_output.empty())
    throw_usage("--device cuda does not form the weights (--attn-weights-out): run it on the cpu");
  std::optional<cuda::precision> gpu_precision;
  if (on_gpu) gpu_precision = cuda::parse_precision(args.dtype);

  safetensors_file file = read_safetensors(args.weights);
  auto layer = multihead_attention::from_state_dict(file.tensors, args.heads, args.weights);

  tensor query = read_float_npy(args.query, "the query");
  if (query.rank() != 3 && query.rank() != 2)
    throw_input(args.query, fmt::format("the query must have shape [B, L, E] or [L, E], got {}",
                                        shape_to_string(query.shape())));
  const bool unbatched = query.rank() == 2;
  tensor key = args.key.empty() ? query : read_float_npy(args.key, "the key");
  tensor value = args.value.empty() ? query : read_float_npy(args.value, "the value");
  const std::string& key_path = args.key.empty() ? args.query : args.key;
  const std::string& value_path = args.value.empty() ? args.query : args.value;
  for (auto [t, path, name] : {std::tuple{&key, key_path, "the key"},
                                std::tuple{&value, value_path, "the value"}})
    if (t->rank() != query.rank())
      throw_input(path, fmt::format("{} has shape {}, but the query has rank {}", name,
                                    shape_to_string(t->shape()), query.rank()));
  query = batched(query, unbatched);
  key = batched(key, unbatched);
  value = batched(value, unbatched);
  const int64_t batch = query.dim(0), length = query.dim(1), keys = key.dim(1);
  expect_dim(query, 2, layer.embed_dim(), args.query, "the query");
  expect_dim(key, 0, batch, key_path, "the key");
  expect_dim(key, 2, layer.kdim(), key_path, "the key");
  expect_dim(value, 0, batch, value_path, "the value");
  expect_dim(value, 1, keys, value_path, "the value");
  expect_dim(value, 2, layer.vdim(), value_path, "the value");

  mha_options options;
  options.causal = args.causal;
  if (!on_gpu) options.dtype = parse_sdpa_dtype(args.dtype);
  std::optional<tensor> padding, mask;
  if (!args.key_padding_mask.empty()) {
    // PyTorch's convention for both MHA masks: bool True = ignore this key.
    padding = read_mask_npy(args.key_padding_mask, /*keep_when=*/false);
    if (unbatched && padding->rank() == 1) padding = padding->reshape({1, padding->dim(0)});
    if (padding->rank() != 2 || padding->dim(0) != batch || padding->dim(1) != keys)
      throw_input(args.key_padding_mask,
                  fmt::format("the key padding mask has shape {}, expected [{}, {}] (B, S)",
                              shape_to_string(padding->shape()), batch, keys));
    options.key_padding_mask = &*padding;
  }
  if (!args.attn_mask.empty()) {
    mask = read_mask_npy(args.attn_mask, /*keep_when=*/false);
    bool ok = (mask->rank() == 2 && mask->dim(0) == length && mask->dim(1) == keys) ||
              (mask->rank() == 3 && mask->dim(0) == batch * layer.num_heads() &&
               mask->dim(1) == length && mask->dim(2) == keys);
    if (!ok)
      throw_input(args.attn_mask,
                  fmt::format("the attention mask has shape {}, expected [{}, {}] (L, S) or "
                              "[{}, {}, {}] (B·H, L, S)",
                              shape_to_string(mask->shape()), length, keys,
                              batch * layer.num_heads(), length, keys));
    options.attn_mask = &*mask;
  }

  tensor weights;
  tensor out = on_gpu ? cuda::mha(layer, query, key, value, options, *gpu_precision)
                      : layer.forward(query, key, value, options, args.weights_output.empty() ? nullptr : &weights);
  if (unbatched) out = out.reshape({length, layer.embed_dim()});
  std::vector<std::pair<std::string, std::string>> outputs{{args.output, encode_npy(out)}};
  if (!args.weights_output.empty()) {
    if (unbatched) weights = weights.reshape({layer.num_heads(), length, keys});
    outputs.emplace_back(args.weights_output, encode_npy(weights));
  }
  write_outputs(outputs);
}

}  // namespace

void add_mha_command(CLI::App& app) {
  auto args = std::make_shared<mha_args>();
  CLI::App* sub = app.add_subcommand(
      "mha", "Multi-head attention exactly like PyTorch's nn.MultiheadAttention(batch_first=True)");
  reads(sub->add_option("--weights", args->weights,
                  "safetensors with in_proj_weight/in_proj_bias (or q/k/v_proj_weight), "
                  "out_proj.weight, out_proj.bias"))
      ->required();
  sub->add_option("--heads", args->heads, "Number of heads (divides the embedding size)")
      ->required()
      ->check(positive_number);
  reads(sub->add_option("--query", args->query, "Query .npy, float32 [B, L, E] (or [L, E])"))->required();
  reads(sub->add_option("--key", args->key, "Key .npy [B, S, kdim] (default: the query)"));
  reads(sub->add_option("--value", args->value, "Value .npy [B, S, vdim] (default: the query)"));
  sub->add_flag("--causal", args->causal, "Causal mask: query i sees keys j ≤ i");
  reads(sub->add_option("--key-padding-mask", args->key_padding_mask,
                  ".npy [B, S]: bool (True = ignore that key) or float (added)"));
  reads(sub->add_option("--attn-mask", args->attn_mask,
                  ".npy [L, S] or [B·H, L, S]: bool (True = not allowed) or float (added)"));
  sub->add_option("--dtype", args->dtype,
                  "float32 (default) or bf16: the attention's products on bf16 operands, float32 "
                  "accumulation (the projections stay float32)");
  sub->add_option("--device", args->device,
                  "cpu (default) or cuda: the layer on the GPU (a build with -DATTN_CUDA=ON); there --dtype is "
                  "float32, bf16 or float16, the precision of the attention's inputs and products (the "
                  "projections and the output float32)");
  writes(sub->add_option("-o,--output", args->output, "Output .npy [B, L, E]"))->required();
  add_threads_option(sub);
  writes(sub->add_option("--attn-weights-out", args->weights_output,
                  "Also write the per-head attention weights [B, H, L, S]"));
  sub->callback([args, sub] {
    check_file_roles(*sub);
    run(*args);
  });
}

}  // namespace attn::cli
