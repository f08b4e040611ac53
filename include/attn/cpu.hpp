// Facts about the CPU attn runs on, for benchmarks and reports.
#pragma once

#include <string>

namespace attn {

// The model name the operating system reports ("unknown" when it reports none).
std::string cpu_model();

// The float32 fused multiply-add peak of this machine in GFLOP/s, measured now: every thread
// runs independent FMA chains of the widest vectors the CPU has (AVX-512, else AVX2) for about
// `seconds`. The ceiling any float32 kernel is compared with.
double measure_fma_peak_gflops(int threads, double seconds = 0.3);

// The bf16 dot-product peak in GFLOP/s, measured the same way with vdpbf16ps chains (each lane
// does two multiply-adds: 64 FLOPs per instruction); 0 where the CPU lacks AVX-512 BF16.
double measure_bf16_peak_gflops(int threads, double seconds = 0.3);

}  // namespace attn
