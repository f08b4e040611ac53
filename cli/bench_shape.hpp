// A bench shape B,N,H,D as the user writes it, shared by attn bench and attn-mpi's ring bench.
#pragma once

#include <cstdint>
#include <string>

namespace attn::cli {

struct bench_shape {
  int64_t B, N, H, D;
};

// "B,N,H,D": four positive integers, each at most 2^24; otherwise a usage error.
bench_shape parse_shape(const std::string& text);

}  // namespace attn::cli
