// Which instruction set the fast kernels use on this CPU, decided once per process. Every kernel
// with per-ISA translation units (sdpa forward, gemm, ...) dispatches on this one answer.
#pragma once

namespace attn::kernels {

enum class isa { reference, avx2, avx512 };

// The best the CPU (and the operating system) supports, or less when the environment variable
// ATTN_ISA=avx2|reference asks for less (to test or compare those paths); never more.
isa selected_isa();

const char* isa_name(isa i);

// How bf16 attention runs: vdpbf16ps where the CPU has AVX-512 BF16 and the selected isa is
// avx512; otherwise the same computation with the instruction emulated in float32 (the same bits,
// not faster); with no AVX2 at all, the float64 reference on the bf16-rounded inputs.
// ATTN_BF16=emulate asks for the emulation on a CPU that has the instruction (to test that path).
enum class bf16_path { reference, emulated_avx2, emulated_avx512, avx512_bf16 };

bf16_path selected_bf16_path();

const char* bf16_path_name(bf16_path p);

// Whether kernels::gemm_bf16 runs its larger products on Intel AMX's tile unit (tdpbf16ps): the
// bf16 path is avx512_bf16, the CPU has AMX-BF16 and Linux lets this process use the tile
// registers (arch_prctl). ATTN_AMX=off says no (to compare with, or test, vdpbf16ps).
bool amx_bf16_usable();

}  // namespace attn::kernels
