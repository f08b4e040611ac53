#include "kernels/gemm_packed_b.hpp"

#include <new>

namespace attn::kernels {

packed_b::packed_b(const gemm_args& g) : isa_(selected_isa()), k_(g.k), n_(g.n) {
  if (g.k <= 0 || g.n <= 0) return;
  void (*pack)(const gemm_args&, float*) = nullptr;
  switch (isa_) {
#if defined(__x86_64__) || defined(__i386__)
    case isa::avx512: width_ = avx512_panel_width(g.n), panel_width_ = avx512_panel_columns(), pack = pack_b_avx512; break;
    case isa::avx2: width_ = avx2_panel_width(g.n), panel_width_ = avx2_panel_columns(), pack = pack_b_avx2; break;
#endif
    default: return;
  }
  const int64_t floats = g.k * width_;
  // Cache-line aligned: the micro-kernel loads whole lines of a panel at a time.
  float* p = static_cast<float*>(::operator new[](static_cast<size_t>(floats) * sizeof(float),
                                                  std::align_val_t(64)));
  panels_ = std::shared_ptr<const float[]>(
      p, [](const float* q) { ::operator delete[](const_cast<float*>(q), std::align_val_t(64)); });
  pack(g, p);
}

}  // namespace attn::kernels
