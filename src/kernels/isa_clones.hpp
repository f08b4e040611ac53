// A function compiled three times, for AVX-512 (x86-64-v4), AVX2 + FMA (x86-64-v3) and the
// baseline, and run in the one kernels::selected_isa() chooses. GCC's target_clones would pick by
// asking the CPU, ignoring ATTN_ISA: a sum over a row's lanes is then added 16 lanes at a time
// under ATTN_ISA=avx2 on an AVX-512 CPU and 8 at a time on an AVX2 CPU, so "the AVX2 bits" were
// not the same on every machine. Here avx512 runs the v4 code, avx2 the v3 code and reference the
// baseline's, whatever the CPU.
//
//   ATTN_ISA_CLONES(float, row_sum, (const float* z, int64_t n), (z, n)) {
//     ... the body, written once ...
//   }
//
// defines row_sum (the dispatcher, with the linkage of where it stands) and, static beside it,
// row_sum_body (the body, always inlined into the three) and its three compilations. A body must
// not open an OpenMP parallel region: the region would be outlined once, for the baseline.
#pragma once

#include "kernels/isa.hpp"

#define ATTN_ISA_CLONES(ret, name, params, args)                                              \
  [[gnu::always_inline]] static inline ret name##_body params;                               \
  [[gnu::target("arch=x86-64-v4")]] static ret name##_v4 params { return name##_body args; } \
  [[gnu::target("arch=x86-64-v3")]] static ret name##_v3 params { return name##_body args; } \
  static ret name##_baseline params { return name##_body args; }                             \
  ret name params {                                                                           \
    switch (::attn::kernels::selected_isa()) {                                                \
      case ::attn::kernels::isa::avx512: return name##_v4 args;                               \
      case ::attn::kernels::isa::avx2: return name##_v3 args;                                 \
      case ::attn::kernels::isa::reference: break;                                            \
    }                                                                                         \
    return name##_baseline args;                                                              \
  }                                                                                           \
  static inline ret name##_body params
