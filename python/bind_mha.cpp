// attn.MultiheadAttention: PyTorch's nn.MultiheadAttention(batch_first=True) with its weights
// loaded from a safetensors file (or a state dict of arrays), called like the PyTorch module.
#include <fmt/format.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "arrays.hpp"
#include "attn/cuda.hpp"
#include "attn/error.hpp"
#include "attn/multihead_attention.hpp"
#include "bindings.hpp"

namespace attn::python {

namespace {

constexpr const char* class_doc =
    R"doc(Multi-head attention with PyTorch's parameter names and semantics
(nn.MultiheadAttention with batch_first=True).

Load it with MultiheadAttention.from_safetensors(path, num_heads) (the README shows how to save
a PyTorch module's state_dict() as safetensors) or MultiheadAttention.from_state_dict(dict,
num_heads), then call it like the PyTorch module.)doc";

constexpr const char* call_doc =
    R"doc(__call__(query, key=None, value=None, *, causal=False, key_padding_mask=None, attn_mask=None, need_weights=False, average_attn_weights=True, dtype="float32", device="cpu")

query: float32 [B, L, E], or [L, E] unbatched. key: [B, S, kdim] (default: query, i.e.
self-attention); value: [B, S, vdim] (default: key). Unbatched inputs give unbatched outputs.

causal: add the top-left causal mask (query i sees keys j <= i).
key_padding_mask: [B, S] ([S] unbatched); bool True = ignore that key, float = added.
attn_mask: [L, S] or [B*num_heads, L, S]; bool True = not allowed, float = added.
need_weights: also return the attention weights, averaged over heads [B, L, S] or, with
    average_attn_weights=False, per head [B, num_heads, L, S].
dtype: "float32", or "bf16": the attention's products on bf16 operands with float32
    accumulation (the projections stay float32). On device="cuda" also "float16".
device: "cpu", or "cuda": the layer on attn's CUDA kernels (a build with -DATTN_CUDA=ON and a
    GPU; see docs/GPU.md), the projections float32 there too; no need_weights there.

Returns the output float32 [B, L, E]; with need_weights, the tuple (output, weights), the
pair PyTorch returns. Unlike PyTorch, need_weights is False by default, so a plain call returns
the array alone. A query that may see no key gives the output projection's bias (PyTorch 1.13
gives NaN).)doc";

// Unbatched inputs [L, E] run as a batch of one.
tensor batched(const tensor& t, bool unbatched) {
  if (!unbatched) return t;
  shape_t shape = t.shape();
  shape.insert(shape.begin(), 1);
  return t.reshape(std::move(shape));
}

// [B, H, L, S] → mean over H, [B, L, S] (double sums: H is small, the cost is nothing).
tensor average_heads(const tensor& w) {
  const tensor d = w.contiguous();
  const int64_t B = d.dim(0), H = d.dim(1), L = d.dim(2), S = d.dim(3);
  tensor out({B, L, S});
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < L * S; ++i) {
      double sum = 0.0;
      for (int64_t h = 0; h < H; ++h) sum += d.data()[(b * H + h) * L * S + i];
      out.data()[b * L * S + i] = static_cast<float>(sum / static_cast<double>(H));
    }
  return out;
}

tensor drop_batch(const tensor& t) {
  shape_t shape(t.shape().begin() + 1, t.shape().end());
  return t.reshape(std::move(shape));
}

// Arrays come as plain objects, converted by arrays.hpp: pybind11's own conversion would turn a
// failure into a TypeError that prints every argument in full.
using optional_array = std::optional<py::object>;

py::object call(const multihead_attention& layer, const py::object& query, const optional_array& key,
                const optional_array& value, bool causal, const optional_array& key_padding_mask,
                const optional_array& attn_mask, bool need_weights, bool average_attn_weights,
                const std::string& dtype, const std::string& device) {
  if (device != "cpu" && device != "cuda") throw_usage("device '" + device + "': expected cpu or cuda");
  const bool on_gpu = device == "cuda";
  if (on_gpu && need_weights) throw_usage("device='cuda' does not form the weights (need_weights): use the cpu");
  std::optional<cuda::precision> precision;
  if (on_gpu) precision = cuda::parse_precision(dtype);
  const array_view q = float32_input(query, "query");
  const array_view k = key ? float32_input(*key, "key") : q;
  const array_view v = value ? float32_input(*value, "value") : k;
  const int rank = q.values.rank();
  if (rank != 2 && rank != 3)
    throw_usage(fmt::format("query has shape {}, expected [B, L, E] or unbatched [L, E]",
                            shape_to_string(q.values.shape())));
  for (const auto& [t, name] : {std::pair{&k.values, "key"}, std::pair{&v.values, "value"}})
    if (t->rank() != rank)
      throw_usage(fmt::format("{} has shape {}, but the query has rank {}", name,
                              shape_to_string(t->shape()), rank));
  const bool unbatched = rank == 2;

  mha_options options;
  options.causal = causal;
  if (!on_gpu) options.dtype = parse_sdpa_dtype(dtype);
  tensor padding, mask;
  if (key_padding_mask) {
    // PyTorch's convention for both MHA masks: bool True = ignore.
    padding =
        batched(mask_input(*key_padding_mask, "key_padding_mask", /*keep_when=*/false), unbatched);
    options.key_padding_mask = &padding;
  }
  if (attn_mask) {
    mask = mask_input(*attn_mask, "attn_mask", /*keep_when=*/false);
    options.attn_mask = &mask;
  }

  tensor out, weights;
  {
    py::gil_scoped_release release;
    if (on_gpu)
      out = cuda::mha(layer, batched(q.values, unbatched), batched(k.values, unbatched), batched(v.values, unbatched),
                      options, *precision);
    else
      out = layer.forward(batched(q.values, unbatched), batched(k.values, unbatched),
                          batched(v.values, unbatched), options, need_weights ? &weights : nullptr);
    if (need_weights && average_attn_weights) weights = average_heads(weights);
  }
  if (unbatched) out = drop_batch(out);
  if (!need_weights) return to_numpy(std::move(out));
  if (unbatched) weights = drop_batch(weights);
  return py::make_tuple(to_numpy(std::move(out)), to_numpy(std::move(weights)));
}

multihead_attention from_dict(const py::dict& state, int64_t num_heads) {
  std::map<std::string, tensor> tensors;
  for (const auto& [name, array] : state) {
    const std::string key = py::str(name);
    // Parameters of any float dtype are accepted: the layer keeps its own float32 copy anyway.
    py::array a = any_array(array, "state dict entry '" + key + "'");
    if (a.dtype().kind() != 'f')
      throw py::type_error("state dict entry '" + key + "' must be a float array");
    py::array_t<float, py::array::c_style | py::array::forcecast> f(a);
    tensors.emplace(key, tensor(shape_t(f.shape(), f.shape() + f.ndim()),
                                std::vector<float>(f.data(), f.data() + f.size())));
  }
  return multihead_attention::from_state_dict(tensors, num_heads, "<state dict>");
}

}  // namespace

void bind_multihead_attention(py::module_& m) {
  using namespace pybind11::literals;
  py::class_<multihead_attention, std::shared_ptr<multihead_attention>>(m, "MultiheadAttention",
                                                                        class_doc)
      .def_static(
          "from_safetensors",
          [](const std::filesystem::path& path, int64_t num_heads) {
            return multihead_attention::load(path.string(), num_heads);
          },
          "path"_a, "num_heads"_a,
          "Loads the layer from a safetensors file holding nn.MultiheadAttention's state_dict()\n"
          "(in_proj_weight, in_proj_bias, out_proj.weight, out_proj.bias; or q_proj_weight,\n"
          "k_proj_weight, v_proj_weight when kdim/vdim differ from embed_dim). Raises\n"
          "attn.InputError naming the file and tensor when one is missing or misshapen.")
      .def_static("from_state_dict", &from_dict, "state_dict"_a, "num_heads"_a,
                  "From a dict of arrays, e.g. {k: t.numpy() for k, t in "
                  "module.state_dict().items()}.")
      .def("__call__", &call, call_doc, "query"_a, "key"_a = py::none(), "value"_a = py::none(),
           py::kw_only(), "causal"_a = false, "key_padding_mask"_a = py::none(),
           "attn_mask"_a = py::none(), "need_weights"_a = false, "average_attn_weights"_a = true,
           "dtype"_a = "float32", "device"_a = "cpu")
      .def_property_readonly("embed_dim", &multihead_attention::embed_dim)
      .def_property_readonly("num_heads", &multihead_attention::num_heads)
      .def_property_readonly("head_dim", &multihead_attention::head_dim)
      .def_property_readonly("kdim", &multihead_attention::kdim)
      .def_property_readonly("vdim", &multihead_attention::vdim)
      .def_property_readonly("bias", &multihead_attention::has_bias)
      .def("__repr__", [](const multihead_attention& l) {
        return fmt::format(
            "attn.MultiheadAttention(embed_dim={}, num_heads={}, kdim={}, vdim={}, "
            "bias={})",
            l.embed_dim(), l.num_heads(), l.kdim(), l.vdim(), l.has_bias() ? "True" : "False");
      });
}

}  // namespace attn::python
