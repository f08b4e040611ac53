// attn::sdpa, the entry point the rest of the library calls.
#include "attn/sdpa.hpp"

namespace attn {

// q [B,H,L,D], k [B,Hkv,S,D], v [B,Hkv,S,Dv] → o [B,H,L,Dv]
// For now this is the reference itself; a fused kernel (tiled, online softmax) will take its
// place and be tested against ref::sdpa, so callers need not change.
tensor sdpa(const tensor& q, const tensor& k, const tensor& v, const sdpa_options& options,
            tensor* weights_out) {
  return ref::sdpa(q, k, v, options, weights_out);
}

}  // namespace attn
