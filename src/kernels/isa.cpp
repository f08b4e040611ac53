#include "kernels/isa.hpp"

#include <cstdlib>
#include <string>

#if defined(__linux__) && defined(__x86_64__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace attn::kernels {

namespace {

isa detect_isa() {
#if defined(__x86_64__) || defined(__i386__)
  // GCC's checks include the operating system's support for the wider registers (XGETBV).
  isa best = isa::reference;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) best = isa::avx2;
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq")) best = isa::avx512;
  if (const char* want = std::getenv("ATTN_ISA")) {
    const std::string w = want;
    if (w == "reference") best = isa::reference;
    else if (w == "avx2" && best == isa::avx512) best = isa::avx2;
  }
  return best;
#else
  return isa::reference;
#endif
}

}  // namespace

isa selected_isa() {
  static const isa chosen = detect_isa();
  return chosen;
}

bf16_path selected_bf16_path() {
  static const bf16_path chosen = [] {
    switch (selected_isa()) {
      case isa::reference: return bf16_path::reference;
      case isa::avx2: return bf16_path::emulated_avx2;
      case isa::avx512: break;
    }
#if defined(__x86_64__) || defined(__i386__)
    const char* want = std::getenv("ATTN_BF16");
    const bool emulate = want != nullptr && std::string(want) == "emulate";
    if (!emulate && __builtin_cpu_supports("avx512bf16")) return bf16_path::avx512_bf16;
#endif
    return bf16_path::emulated_avx512;
  }();
  return chosen;
}

bool amx_bf16_usable() {
  static const bool usable = [] {
    if (selected_bf16_path() != bf16_path::avx512_bf16) return false;
    if (const char* want = std::getenv("ATTN_AMX"); want != nullptr && std::string(want) == "off") return false;
#if defined(__linux__) && defined(__x86_64__)
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
    const bool tiles = (edx >> 24) & 1u, bf16 = (edx >> 22) & 1u;
    if (!tiles || !bf16) return false;
    // The tile registers are state the kernel saves only for a process that asked for them.
    constexpr long request_permission = 0x1023, tile_data = 18;  // ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA
    return syscall(SYS_arch_prctl, request_permission, tile_data) == 0;
#else
    return false;
#endif
  }();
  return usable;
}

const char* bf16_path_name(bf16_path p) {
  switch (p) {
    case bf16_path::avx512_bf16: return "avx512_bf16";
    case bf16_path::emulated_avx512: return "avx512 (bf16 emulated)";
    case bf16_path::emulated_avx2: return "avx2 (bf16 emulated)";
    case bf16_path::reference: break;
  }
  return "reference";
}

const char* isa_name(isa i) {
  switch (i) {
    case isa::avx512: return "avx512";
    case isa::avx2: return "avx2";
    case isa::reference: break;
  }
  return "reference";
}

}  // namespace attn::kernels
