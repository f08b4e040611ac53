// A scope in which the float layers' products run on bf16 operands with float32 sums
// (kernels::gemm_bf16), as inside PyTorch's torch.autocast("cpu", dtype=torch.bfloat16): the
// weights, their gradients and everything between the products stay float32. Process-wide,
// not per thread, so that products a layer runs on OpenMP threads follow it too. attn train
// --task translate --dtype bf16 opens one around each training step's forward and backward;
// held-out scoring and translation run outside it, in float32.
#pragma once

#include <atomic>

namespace attn::nn {

bool bf16_products();

class bf16_autocast {
 public:
  explicit bf16_autocast(bool on);
  ~bf16_autocast();
  bf16_autocast(const bf16_autocast&) = delete;
  bf16_autocast& operator=(const bf16_autocast&) = delete;

 private:
  bool before_;
};

}  // namespace attn::nn
