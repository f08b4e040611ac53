// What a benchmark runs on, shared by attn bench and attn-mpi's ring bench: the shape B,N,H,D as
// the user writes it, and random inputs.
#pragma once

#include <cstdint>
#include <random>
#include <string>

#include "attn/tensor.hpp"

namespace attn::cli {

struct bench_shape {
  int64_t B, N, H, D;
};

// "B,N,H,D": four positive integers, each at most 2^24; otherwise a usage error.
bench_shape parse_shape(const std::string& text);

// Uniform in [-range, range): never zeros, which some kernels would race through.
tensor random_tensor(const shape_t& shape, std::mt19937& rng, float range = 1.0f);

}  // namespace attn::cli
