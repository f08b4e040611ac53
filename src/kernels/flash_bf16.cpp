// bf16 attention, forward and backward: which kernel runs (see isa.hpp's bf16_path).
#include "kernels/flash_backward_problem.hpp"
#include "kernels/flash_problem.hpp"
#include "kernels/isa.hpp"

namespace attn::kernels {

void flash_forward_bf16(const flash_problem& p) {
#if defined(__x86_64__) || defined(__i386__)
  switch (selected_bf16_path()) {
    case bf16_path::avx512_bf16: return flash_forward_bf16_avx512(p);
    case bf16_path::emulated_avx512: return flash_forward_bf16_emulated_avx512(p);
    case bf16_path::emulated_avx2: return flash_forward_bf16_emulated_avx2(p);
    case bf16_path::reference: break;  // attn::sdpa runs the reference before it gets here
  }
#else
  (void)p;
#endif
}

void flash_backward_bf16(const flash_backward_problem& p) {
#if defined(__x86_64__) || defined(__i386__)
  switch (selected_bf16_path()) {
    case bf16_path::avx512_bf16: return flash_backward_bf16_avx512(p);
    case bf16_path::emulated_avx512: return flash_backward_bf16_emulated_avx512(p);
    case bf16_path::emulated_avx2: return flash_backward_bf16_emulated_avx2(p);
    case bf16_path::reference: break;  // attn::sdpa_backward runs the reference before it gets here
  }
#else
  (void)p;
#endif
}

}  // namespace attn::kernels
