// Multi-head attention with PyTorch's nn.MultiheadAttention(batch_first=True) semantics: the
// projections are linear layers, the heads run through sdpa with one combined additive mask.
#include "attn/multihead_attention.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include "attn/error.hpp"
#include "attn/sdpa.hpp"
#include "nn/multihead_attention_scratch.hpp"
#include "nn/packed_linear.hpp"

namespace attn {

// The projections' weights, packed once when the layer is built. When kdim == vdim == E the
// three input projections are one [3E, E] matrix, so self-attention computes Q, K and V in one
// product (x read once, one pass of the threads); otherwise each has its own.
struct multihead_attention::packed_projections {
  nn::packed_linear in;       // [Wq; Wk; Wv], when kdim == vdim == E
  nn::packed_linear q, k, v;  // otherwise
  nn::packed_linear out;
};

namespace {

class state_reader {
 public:
  state_reader(const std::map<std::string, tensor>& state, const std::string& source)
      : state_(state), source_(source) {}

  const tensor* find(const std::string& name) const {
    auto it = state_.find(name);
    return it == state_.end() ? nullptr : &it->second;
  }

  // The tensor, checked against `expected`; `expected_text` spells it when a size is unknown.
  tensor get(const std::string& name, const shape_t& expected,
             const std::string& expected_text = "") const {
    const tensor* t = find(name);
    if (t == nullptr) throw_input(source_, fmt::format("missing tensor '{}'", name));
    check(name, *t, expected, expected_text);
    // A private dense copy: the state dict's storage may be a view, or be changed later.
    return t->clone();
  }

  void check(const std::string& name, const tensor& t, const shape_t& expected,
             const std::string& expected_text = "") const {
    if (t.empty() || t.shape() != expected)
      fail_shape(name, t, expected_text.empty() ? shape_to_string(expected) : expected_text);
  }

  [[noreturn]] void fail_shape(const std::string& name, const tensor& t,
                               const std::string& expected) const {
    throw_input(source_, fmt::format("tensor '{}' has shape {}, expected {}", name,
                                     shape_to_string(t.shape()), expected));
  }

  [[noreturn]] void fail(const std::string& what) const { throw_input(source_, what); }

 private:
  const std::map<std::string, tensor>& state_;
  const std::string& source_;
};

// Dense tensors stacked along their first axis (all with the same trailing sizes).
tensor concat_rows(const std::vector<tensor>& parts) {
  shape_t shape = parts.front().shape();
  shape[0] = 0;
  for (const tensor& t : parts) shape[0] += t.dim(0);
  tensor out(shape);
  float* dst = out.data();
  for (const tensor& t : parts) {
    const tensor c = t.contiguous();
    dst = std::copy(c.data(), c.data() + c.numel(), dst);
  }
  return out;
}

// Whether a and b are one and the same view (self-attention passes x as query, key and value).
bool same_view(const tensor& a, const tensor& b) {
  return a.data() == b.data() && a.shape() == b.shape() && a.strides() == b.strides();
}

}  // namespace

multihead_attention multihead_attention::from_state_dict(const std::map<std::string, tensor>& state,
                                                         int64_t num_heads,
                                                         const std::string& source) {
  if (num_heads <= 0) throw_usage(fmt::format("num_heads must be positive, got {}", num_heads));
  const state_reader r(state, source);
  // add_bias_kv appends learned rows to the keys and values; ignoring them would give wrong
  // numbers without a word, so refuse instead.
  for (const char* name : {"bias_k", "bias_v"})
    if (r.find(name) != nullptr)
      r.fail(fmt::format("tensor '{}' (add_bias_kv=True) is not supported", name));

  multihead_attention m;
  m.num_heads_ = num_heads;
  const tensor* packed = r.find("in_proj_weight");
  const bool separate = r.find("q_proj_weight") != nullptr ||
                        r.find("k_proj_weight") != nullptr || r.find("v_proj_weight") != nullptr;
  if (packed != nullptr && separate)
    r.fail("both 'in_proj_weight' and q_proj_weight/k_proj_weight/v_proj_weight are present");
  if (packed != nullptr) {
    // [3E, E], rows q; k; v — PyTorch packs them this way only when kdim == vdim == E.
    if (packed->rank() != 2 || packed->dim(1) == 0 || packed->dim(0) != 3 * packed->dim(1))
      r.fail_shape("in_proj_weight", *packed,
                   packed->rank() == 2 && packed->dim(1) > 0
                       ? shape_to_string({3 * packed->dim(1), packed->dim(1)})
                       : std::string("[3E, E]"));
    const int64_t E = packed->dim(1);
    const tensor w = r.get("in_proj_weight", {3 * E, E});
    m.embed_dim_ = m.kdim_ = m.vdim_ = E;
    m.q_weight_ = w.slice(0, 0, E).clone();
    m.k_weight_ = w.slice(0, E, 2 * E).clone();
    m.v_weight_ = w.slice(0, 2 * E, 3 * E).clone();
  } else if (separate) {
    const tensor* q = r.find("q_proj_weight");
    if (q == nullptr) r.fail("missing tensor 'q_proj_weight'");
    if (q->rank() != 2 || q->dim(0) == 0 || q->dim(0) != q->dim(1))
      r.fail_shape("q_proj_weight", *q, "[E, E]");
    const int64_t E = q->dim(0);
    m.embed_dim_ = E;
    m.q_weight_ = r.get("q_proj_weight", {E, E});
    // kdim and vdim are whatever the key and value projections take in.
    const auto input_size = [&](const char* name) {
      const tensor* t = r.find(name);
      if (t == nullptr) r.fail(fmt::format("missing tensor '{}'", name));
      if (t->rank() != 2 || t->dim(0) != E || t->dim(1) == 0)
        r.fail_shape(name, *t, fmt::format("[{}, {}]", E, name[0] == 'k' ? "kdim" : "vdim"));
      return t->dim(1);
    };
    m.kdim_ = input_size("k_proj_weight");
    m.vdim_ = input_size("v_proj_weight");
    m.k_weight_ = r.get("k_proj_weight", {E, m.kdim_});
    m.v_weight_ = r.get("v_proj_weight", {E, m.vdim_});
  } else {
    r.fail("missing tensor 'in_proj_weight' (or q_proj_weight/k_proj_weight/v_proj_weight)");
  }

  const int64_t E = m.embed_dim_;
  if (E % num_heads != 0)
    throw_usage(fmt::format("embed_dim {} is not divisible by num_heads {}", E, num_heads));
  m.out_weight_ = r.get("out_proj.weight", {E, E});

  // bias=False drops every bias; a state dict with only some of them is not one PyTorch makes.
  const bool in_bias = r.find("in_proj_bias") != nullptr;
  const bool out_bias = r.find("out_proj.bias") != nullptr;
  if (in_bias != out_bias)
    r.fail(fmt::format("tensor '{}' is present but '{}' is missing (biases are all or none)",
                       in_bias ? "in_proj_bias" : "out_proj.bias",
                       in_bias ? "out_proj.bias" : "in_proj_bias"));
  if (in_bias) {
    const tensor b = r.get("in_proj_bias", {3 * E});
    m.q_bias_ = b.slice(0, 0, E).clone();
    m.k_bias_ = b.slice(0, E, 2 * E).clone();
    m.v_bias_ = b.slice(0, 2 * E, 3 * E).clone();
    m.out_bias_ = r.get("out_proj.bias", {E});
  }

  auto projections = std::make_shared<packed_projections>();
  if (m.kdim_ == E && m.vdim_ == E) {
    const tensor w = concat_rows({m.q_weight_, m.k_weight_, m.v_weight_});
    projections->in = nn::packed_linear(w, m.has_bias() ? concat_rows({m.q_bias_, m.k_bias_, m.v_bias_}) : tensor());
    // The layer's own weights become views of the stacked copy rather than a second one.
    m.q_weight_ = w.slice(0, 0, E), m.k_weight_ = w.slice(0, E, 2 * E), m.v_weight_ = w.slice(0, 2 * E, 3 * E);
  } else {
    projections->q = nn::packed_linear(m.q_weight_, m.q_bias_);
    projections->k = nn::packed_linear(m.k_weight_, m.k_bias_);
    projections->v = nn::packed_linear(m.v_weight_, m.v_bias_);
  }
  projections->out = nn::packed_linear(m.out_weight_, m.out_bias_);
  m.packed_ = std::move(projections);
  return m;
}

// query [B,L,E], key [B,S,kdim], value [B,S,vdim] → [B,L,E]; weights [B,H,L,S]
tensor multihead_attention::checked_mask(const tensor& query, const tensor& key, const tensor& value,
                                        const mha_options& options) const {
  const auto fail = [](const tensor& t, const char* name, const std::string& problem) {
    throw_usage(fmt::format("{}: {}", t.describe(name), problem));
  };
  if (packed_ == nullptr) throw_usage("multihead_attention: build it with from_state_dict or load");
  const int64_t E = embed_dim_, H = num_heads_;
  if (query.rank() != 3 || query.dim(2) != E)
    fail(query, "query", fmt::format("expected [B, L, {}] (embed_dim {})", E, E));
  const int64_t B = query.dim(0), L = query.dim(1);
  if (key.rank() != 3 || key.dim(0) != B || key.dim(2) != kdim_)
    fail(key, "key", fmt::format("expected [{}, S, {}] (batch of query, kdim {})", B, kdim_, kdim_));
  const int64_t S = key.dim(1);
  if (value.rank() != 3 || value.dim(0) != B || value.dim(1) != S || value.dim(2) != vdim_)
    fail(value, "value",
         fmt::format("expected {} (batch and length of key, vdim {})",
                     shape_to_string({B, S, vdim_}), vdim_));
  const tensor* kpm = options.key_padding_mask;
  if (kpm != nullptr && (kpm->empty() || kpm->shape() != shape_t{B, S}))
    fail(*kpm, "key_padding_mask", fmt::format("expected [B, S] = {}", shape_to_string({B, S})));
  const tensor* am = options.attn_mask;
  const bool per_head = am != nullptr && am->rank() == 3;
  if (am != nullptr && (am->empty() || (am->shape() != shape_t{L, S} &&
                                        am->shape() != shape_t{B * H, L, S})))
    fail(*am, "attn_mask",
         fmt::format("expected [L, S] = {} or [B·H, L, S] = {}", shape_to_string({L, S}),
                     shape_to_string({B * H, L, S})));

  // Both masks are additive. Alone, each goes to the attention as a broadcast view (a key
  // padding mask as [B, 1, 1, S], which the fused kernel applies per key); together, one
  // [B, H, L, S] sum carries them. The causal part is left to the attention, which skips those keys outright.
  tensor mask;
  if (kpm != nullptr && am == nullptr) {
    mask = kpm->contiguous().reshape({B, 1, 1, S});
  } else if (am != nullptr && kpm == nullptr) {
    mask = per_head ? am->contiguous().reshape({B, H, L, S}) : *am;
  } else if (kpm != nullptr && am != nullptr) {
    mask = tensor({B, H, L, S});
    const tensor kp = kpm->contiguous();
    const tensor at = am->contiguous();
    float* md = mask.data();
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t i = 0; i < L; ++i)
          for (int64_t j = 0; j < S; ++j) {
            // PyTorch lays a 3-d attn_mask out as [B·H, L, S] with index b·H + h.
            md[((b * H + h) * L + i) * S + j] =
                kp.data()[b * S + j] + at.data()[((per_head ? b * H + h : 0) * L + i) * S + j];
          }
  }
  return mask;
}

tensor multihead_attention::forward(const tensor& query, const tensor& key, const tensor& value,
                                    const mha_options& options, tensor* weights_out) const {
  const tensor mask = checked_mask(query, key, value, options);
  const int64_t E = embed_dim_, H = num_heads_, hd = head_dim();
  const int64_t B = query.dim(0), L = query.dim(1), S = key.dim(1);

  const packed_projections& p = *packed_;
  // [B, n, E] → [B, H, n, hd]: a strided view, which sdpa reads as it is.
  const auto heads = [&](const tensor& x, int64_t n) {
    return x.reshape({B, n, H, hd}).transpose(1, 2);
  };
  // Projection `which` (0 q, 1 k, 2 v) of x [B, n, in] → [B, n, E].
  const auto project = [&](const tensor& x, int64_t n, int which) {
    const tensor xc = x.contiguous();
    tensor y = tensor::uninitialized({B, n, E});  // written whole: the product never reads it
    if (!p.in.empty()) p.in.apply(xc.data(), B * n, y.data(), E, which * E, E);
    else (which == 0 ? p.q : which == 1 ? p.k : p.v).apply(xc.data(), B * n, y.data());
    return y;
  };
  tensor q, k, v;
  const bool self_attention = !p.in.empty() && same_view(query, key) && same_view(key, value);
  if (self_attention && hd % 32 == 0) {
    // One product x·[Wq; Wk; Wv]ᵀ written straight as heads [B, 3H, L, hd]: sdpa reads each
    // head's rows dense (on 1,2048,8,64 it ran 12% faster so than on rows 3E apart).
    const tensor x = query.contiguous();
    float* const qkv = nn::mha_scratch(nn::mha_scratch_slot::qkv, static_cast<size_t>(B * L * 3 * E));
    p.in.apply_as_heads(x.data(), B, L, qkv, hd);
    const tensor heads3 = tensor::view(qkv, {B, 3 * H, L, hd});
    q = heads3.slice(1, 0, H);
    k = heads3.slice(1, H, 2 * H);
    v = heads3.slice(1, 2 * H, 3 * H);
  } else if (self_attention) {
    // The same product as [B, L, 3E], each row Q | K | V, of which the heads are strided views.
    const tensor x = query.contiguous();
    float* const qkv = nn::mha_scratch(nn::mha_scratch_slot::qkv, static_cast<size_t>(B * L * 3 * E));
    p.in.apply(x.data(), B * L, qkv);
    const tensor split = tensor::view(qkv, {B, L, 3 * H, hd});
    q = split.slice(2, 0, H).transpose(1, 2);
    k = split.slice(2, H, 2 * H).transpose(1, 2);
    v = split.slice(2, 2 * H, 3 * H).transpose(1, 2);
  } else {
    q = heads(project(query, L, 0), L);
    k = heads(project(key, S, 1), S);
    v = heads(project(value, S, 2), S);
  }

  sdpa_options so;
  so.causal = options.causal;
  so.dtype = options.dtype;
  if (!mask.empty()) so.attn_mask = &mask;

  const tensor o = sdpa(q, k, v, so, weights_out);  // [B, H, L, hd]
  // The heads side by side, [B, L, H·hd], for the output projection.
  float* const concat = nn::mha_scratch(nn::mha_scratch_slot::heads, static_cast<size_t>(B * L * E));
  const tensor oc = o.contiguous();  // [B, H, L, hd]
  const float* const od = oc.data();
#pragma omp parallel for if (B * L * E >= (int64_t{1} << 18))
  for (int64_t bl = 0; bl < B * L; ++bl) {
    const int64_t b = bl / L, l = bl % L;
    for (int64_t h = 0; h < H; ++h)
      std::copy_n(od + ((b * H + h) * L + l) * hd, hd, concat + bl * E + h * hd);
  }
  tensor y = tensor::uninitialized({B, L, E});  // written whole: the product never reads it
  p.out.apply(concat, B * L, y.data());
  return y;
}

}  // namespace attn
