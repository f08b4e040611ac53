// Resizing a kernel's scratch vectors, compiled once with the baseline's flags.
//
// The fused kernels are compiled a file per instruction set (-mavx512f …). A std::vector member
// they call out of line, such as resize's _M_default_append, is then emitted in that file too,
// compiled for AVX-512, and the linker keeps one copy of it for the whole library: where that is
// the AVX-512 copy, every other caller runs AVX-512 code (SIGILL on an AVX2 CPU, as the sanitized
// build's bf16 tests did). The kernels call these instead, whose one copy is the baseline's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace attn::kernels {

void resize_scratch(std::vector<float>& v, size_t n);
void resize_scratch(std::vector<uint32_t>& v, size_t n);
void resize_scratch(std::vector<uint16_t>& v, size_t n);

}  // namespace attn::kernels
