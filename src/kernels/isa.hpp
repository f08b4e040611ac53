// Which instruction set the fast kernels use on this CPU, decided once per process. Every kernel
// with per-ISA translation units (sdpa forward, gemm, ...) dispatches on this one answer.
#pragma once

namespace attn::kernels {

enum class isa { reference, avx2, avx512 };

// The best the CPU (and the operating system) supports, or less when the environment variable
// ATTN_ISA=avx2|reference asks for less (to test or compare those paths); never more.
isa selected_isa();

const char* isa_name(isa i);

}  // namespace attn::kernels
