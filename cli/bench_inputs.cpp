// bench_inputs.hpp: a bench shape parsed, random inputs.
#include "bench_inputs.hpp"

#include <fmt/format.h>

#include <exception>

#include "attn/error.hpp"

namespace attn::cli {

bench_shape parse_shape(const std::string& text) {
  bench_shape s{};
  int64_t* fields[] = {&s.B, &s.N, &s.H, &s.D};
  size_t pos = 0;
  for (int i = 0; i < 4; ++i) {
    const size_t end = i < 3 ? text.find(',', pos) : text.size();
    const std::string field = end == std::string::npos ? "" : text.substr(pos, end - pos);
    size_t used = 0;
    long long value = 0;
    try {
      value = std::stoll(field, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (field.empty() || used != field.size() || value <= 0 || value > (1 << 24))
      throw_usage(fmt::format("shape '{}': expected B,N,H,D with four positive integers", text));
    *fields[i] = value;
    pos = end + 1;
  }
  return s;
}

tensor random_tensor(const shape_t& shape, std::mt19937& rng, float range) {
  std::uniform_real_distribution<float> dist(-range, range);
  tensor t(shape);
  for (float& x : t.values()) x = dist(rng);
  return t;
}

}  // namespace attn::cli
