// The right-hand matrix of many products, packed once: a layer's weights are the same in every
// call, so packing them into the micro-kernel's panels (a transposing copy, per call and per
// thread otherwise) is work done once, when the layer is built.
#pragma once

#include <cstdint>
#include <memory>

#include "kernels/gemm.hpp"
#include "kernels/isa.hpp"

namespace attn::kernels {

class packed_b {
 public:
  packed_b() = default;
  // op(B) of g (its b, ldb, trans_b, k and n), packed for the instruction set gemm uses here.
  // With no fast kernel on this CPU it holds nothing, and gemm reads g.b as usual.
  explicit packed_b(const gemm_args& g);

  int64_t k() const { return k_; }
  int64_t n() const { return n_; }

  // The panels of columns [first_column, first_column + n) for a product of inner size k on
  // `kernel`; none (data nullptr) when they were packed for another inner size or kernel, or
  // when first_column does not start a panel (then the product packs B itself).
  b_panels columns(isa kernel, int64_t k, int64_t first_column, int64_t n) const {
    if (panels_ == nullptr || kernel != isa_ || k != k_ || first_column < 0 ||
        first_column + n > n_ || first_column % panel_width_ != 0)
      return {};
    return {panels_.get(), width_, first_column};
  }

 private:
  isa isa_ = isa::reference;
  int64_t k_ = 0, n_ = 0;
  int64_t panel_width_ = 1, width_ = 0;    // NR of the kernel; n padded to whole panels
  std::shared_ptr<const float[]> panels_;  // immutable, so copies of a layer share them
};

// kernels::gemm(g) reading op(B) from columns [first_column, first_column + g.n) of `b` instead
// of packing g.b: the same bits. g still describes B in full (the reference, or a packing that
// does not fit, reads it).
void gemm(const gemm_args& g, const packed_b& b, int64_t first_column = 0);

}  // namespace attn::kernels
