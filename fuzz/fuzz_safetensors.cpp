// The safetensors reader on arbitrary bytes: it must either return tensors whose sizes agree with
// their shapes or throw attn::error; never read out of bounds, overflow or hang.
#include <cstddef>
#include <cstdint>
#include <string>

#include "attn/error.hpp"
#include "attn/safetensors.hpp"
#include "fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  try {
    const attn::safetensors_file file = attn::parse_safetensors(bytes, "fuzz");
    for (const auto& [name, t] : file.tensors)
      attn::fuzz::require(static_cast<size_t>(t.numel()) == t.values().size(),
                          "a tensor's values match its shape");
  } catch (const attn::error& e) {
    attn::fuzz::require(e.kind() == attn::error_kind::input, "a bad file is an input error");
  }
  return 0;
}
