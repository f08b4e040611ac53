// The .attnvec loader on arbitrary bytes, then every word looked up and every row read, so a
// header that lies about the sizes shows up as an out-of-bounds read here.
#include <cstddef>
#include <cstdint>
#include <span>

#include "attn/error.hpp"
#include "attn/vectors.hpp"
#include "fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const attn::vectors v = attn::vectors::from_attnvec_bytes(std::span(data, size), "fuzz");
    attn::fuzz::require(v.size() > 0 && v.dim() > 0, "a loaded table is not empty");
    float sum = 0;
    for (int64_t i = 0; i < v.size(); ++i) {
      const auto found = v.find(v.word(i));
      attn::fuzz::require(found.has_value() && *found <= i, "each word finds its first row");
      for (float x : v.vector(i)) sum += x;
    }
    static_cast<void>(sum);
  } catch (const attn::error& e) {
    attn::fuzz::require(e.kind() == attn::error_kind::input, "a bad file is an input error");
  }
  return 0;
}
