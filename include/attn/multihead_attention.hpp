// Multi-head attention with the semantics and parameter names of PyTorch's
// nn.MultiheadAttention(batch_first=True):
//   query [B, L, E], key [B, S, kdim], value [B, S, vdim] → output [B, L, E],
//   weights (per head) [B, H, L, S].
// Q = query·W_qᵀ + b_q, K = key·W_kᵀ + b_k, V = value·W_vᵀ + b_v, split into H heads of E/H,
// sdpa per head with scale 1/√(E/H), heads concatenated, then out_proj.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "attn/sdpa.hpp"
#include "attn/tensor.hpp"

namespace attn {

struct mha_options {
  // [B, S]: additive float (0 / -inf); bool masks (True = ignore) go through
  // additive_mask_from_bool(flags, /*keep_when=*/false) first.
  const tensor* key_padding_mask = nullptr;
  // [L, S] or [B·H, L, S]: additive float, as above.
  const tensor* attn_mask = nullptr;
  bool causal = false;  // adds the top-left causal mask
  // The attention's products (sdpa_dtype, in sdpa.hpp); the projections stay float32.
  sdpa_dtype dtype = sdpa_dtype::float32;
};

class multihead_attention {
 public:
  // Builds from a PyTorch state dict: in_proj_weight [3E, E] (rows q; k; v) and in_proj_bias
  // [3E], or q_proj_weight [E, E], k_proj_weight [E, kdim], v_proj_weight [E, vdim];
  // out_proj.weight [E, E], out_proj.bias [E]. Biases are optional (bias=False), but all or none.
  // `source` names the file in error messages.
  static multihead_attention from_state_dict(const std::map<std::string, tensor>& state,
                                             int64_t num_heads, const std::string& source = "");
  // The same from a safetensors file holding that state dict (F32, F16 or BF16); the README
  // shows how to write one from PyTorch. Errors name the file.
  static multihead_attention load(const std::string& path, int64_t num_heads);

  int64_t embed_dim() const { return embed_dim_; }
  int64_t kdim() const { return kdim_; }
  int64_t vdim() const { return vdim_; }
  int64_t num_heads() const { return num_heads_; }
  int64_t head_dim() const { return embed_dim_ / num_heads_; }
  bool has_bias() const { return !q_bias_.empty(); }

  // weights_out, when given, receives the per-head attention weights [B, H, L, S].
  tensor forward(const tensor& query, const tensor& key, const tensor& value,
                 const mha_options& options = {}, tensor* weights_out = nullptr) const;

  // What forward checks of its inputs (usage errors naming the tensor), and the one additive
  // mask it gives the attention: empty for none, the key padding mask as [B, 1, 1, S], attn_mask
  // as given ([L, S]) or per head [B, H, L, S], or their sum [B, H, L, S]. attn::cuda::mha
  // runs the same.
  tensor checked_mask(const tensor& query, const tensor& key, const tensor& value,
                      const mha_options& options = {}) const;
  // The projections as loaded: weights [E, in] (in = E, kdim, vdim, E) and biases [E], empty
  // without bias.
  const tensor& q_weight() const { return q_weight_; }
  const tensor& k_weight() const { return k_weight_; }
  const tensor& v_weight() const { return v_weight_; }
  const tensor& out_weight() const { return out_weight_; }
  const tensor& q_bias() const { return q_bias_; }
  const tensor& k_bias() const { return k_bias_; }
  const tensor& v_bias() const { return v_bias_; }
  const tensor& out_bias() const { return out_bias_; }

 private:
  int64_t embed_dim_ = 0, kdim_ = 0, vdim_ = 0, num_heads_ = 0;
  tensor q_weight_, k_weight_, v_weight_, out_weight_;
  tensor q_bias_, k_bias_, v_bias_, out_bias_;  // empty without bias
  // The same weights packed once for the matrix-product kernel (multihead_attention.cpp).
  struct packed_projections;
  std::shared_ptr<const packed_projections> packed_;
};

// The spelling; attn names its types in snake_case like the standard library.
using MultiheadAttention = multihead_attention;

}  // namespace attn
