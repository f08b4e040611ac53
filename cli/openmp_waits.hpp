// use_short_openmp_spins: idle OpenMP workers sleep soon instead of spinning for milliseconds,
// unless the user chose (OMP_WAIT_POLICY or GOMP_SPINCOUNT). Call first thing in main.
#pragma once

namespace attn::cli {

void use_short_openmp_spins(char** argv);

}  // namespace attn::cli
