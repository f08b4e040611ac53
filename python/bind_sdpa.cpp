// attn.sdpa: scaled dot-product attention on NumPy arrays, the GIL released while it computes.
#include <pybind11/stl.h>

#include <cmath>
#include <optional>
#include <string>

#include "arrays.hpp"
#include "attn/cuda.hpp"
#include "attn/error.hpp"
#include "attn/sdpa.hpp"
#include "bindings.hpp"

namespace attn::python {

namespace {

constexpr const char* sdpa_doc =
    R"doc(sdpa(q, k, v, *, causal=False, scale=None, attn_mask=None, need_weights=False, dtype="float32", device="cpu")

Scaled dot-product attention, softmax(q·kᵀ·scale + mask)·v, per batch and head.

q: float32 [B, H, L, D]; k: float32 [B, Hkv, S, D]; v: float32 [B, Hkv, S, Dv].
Hkv must divide H (grouped-query attention: query head h reads key/value head h // (H // Hkv)).
Arrays that are float32 and C-contiguous are read in place, without a copy; other dtypes raise
TypeError.

causal: top-left aligned, as PyTorch's is_causal (query i sees keys j <= i).
scale: the factor on the scores; None is 1/sqrt(D).
attn_mask: broadcastable to [B, H, L, S]. bool: True = takes part (as
    torch.nn.functional.scaled_dot_product_attention); float: added to the scores.
need_weights: also return the softmax weights [B, H, L, S].
dtype: "float32", or "bf16": q·kᵀ and p·v on bf16 operands with float32 accumulation (the
    float32 arrays rounded to bf16 on the way in; the softmax and the output stay float32).
device: "cpu", or "cuda": attn's CUDA kernels (a build with -DATTN_CUDA=ON and a GPU; see
    docs/GPU.md). There dtype may also be "float16"; the arrays are copied to the GPU, rounded
    to dtype, and the output comes back float32. need_weights is cpu only.

Returns the output float32 [B, H, L, Dv], or (output, weights) with need_weights.
A query that may see no key gives 0 (PyTorch 1.13 gives NaN there).
Raises attn.UsageError (a ValueError) when the shapes do not fit.)doc";

// The arrays come as plain objects (anything np.asarray takes, arrays.hpp), so that a failure is
// one line rather than pybind11's list of every argument in full.
py::object sdpa_py(const py::object& q, const py::object& k, const py::object& v, bool causal,
                   std::optional<double> scale, const std::optional<py::object>& attn_mask,
                   bool need_weights, const std::string& dtype, const std::string& device) {
  if (device != "cpu" && device != "cuda") throw_usage("device '" + device + "': expected cpu or cuda");
  const bool on_gpu = device == "cuda";
  if (on_gpu && need_weights) throw_usage("device='cuda' does not form the weights (need_weights): use the cpu");
  const array_view qa = float32_input(q, "q"), ka = float32_input(k, "k"),
                   va = float32_input(v, "v");
  sdpa_options options;
  options.causal = causal;
  std::optional<cuda::precision> precision;
  if (on_gpu) precision = cuda::parse_precision(dtype);
  else options.dtype = parse_sdpa_dtype(dtype);
  if (scale) {
    if (!std::isfinite(*scale)) throw py::value_error("scale must be a finite number");
    options.scale = {scale_spec::mode::value, *scale};
  }
  tensor mask;
  if (attn_mask) {
    mask = mask_input(*attn_mask, "attn_mask", /*keep_when=*/true);
    options.attn_mask = &mask;
  }
  tensor out, weights;
  {
    // Only attn's own memory and the arrays' buffers are touched here, and the arrays are held.
    py::gil_scoped_release release;
    out = on_gpu ? cuda::sdpa(qa.values, ka.values, va.values, options, *precision)
                 : sdpa(qa.values, ka.values, va.values, options, need_weights ? &weights : nullptr);
  }
  if (!need_weights) return to_numpy(std::move(out));
  return py::make_tuple(to_numpy(std::move(out)), to_numpy(std::move(weights)));
}

}  // namespace

void bind_sdpa(py::module_& m) {
  using namespace pybind11::literals;
  m.def("sdpa", &sdpa_py, sdpa_doc, "q"_a, "k"_a, "v"_a, py::kw_only(), "causal"_a = false,
        "scale"_a = py::none(), "attn_mask"_a = py::none(), "need_weights"_a = false, "dtype"_a = "float32",
        "device"_a = "cpu");
}

}  // namespace attn::python
