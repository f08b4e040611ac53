// The .npy reader on arbitrary bytes: an array or attn::error, never a crash; and whatever it
// accepts, written back with encode_npy, reads again as the same array (bit for bit).
#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "attn/error.hpp"
#include "attn/npy.hpp"
#include "fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  attn::npy_array array;
  try {
    array = attn::parse_npy(bytes, "fuzz");
  } catch (const attn::error& e) {
    attn::fuzz::require(e.kind() == attn::error_kind::input, "a bad file is an input error");
    return 0;
  }
  // encode_npy refuses rank > ~6000 (the v1.0 header limit) as a usage error; that is fine.
  std::string again;
  try {
    again = attn::encode_npy(array.values, array.dtype);
  } catch (const attn::error& e) {
    attn::fuzz::require(e.kind() == attn::error_kind::usage, "encode refuses only as usage");
    return 0;
  }
  const attn::npy_array back = attn::parse_npy(again, "fuzz (re-encoded)");
  attn::fuzz::require(back.dtype == array.dtype, "dtype survives a round trip");
  attn::fuzz::require(back.values.shape() == array.values.shape(), "shape survives a round trip");
  const std::span<const float> a = array.values.values(), b = back.values.values();
  for (size_t i = 0; i < a.size(); ++i)
    attn::fuzz::require(std::bit_cast<uint32_t>(a[i]) == std::bit_cast<uint32_t>(b[i]),
                        "values survive a round trip bit for bit");
  return 0;
}
