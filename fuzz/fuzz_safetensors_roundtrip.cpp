// safetensors write → read: tensors of fuzzed names, shapes (empty and rank 0 included),
// values (any bit pattern, NaN payloads too) and metadata are encoded as F32 or F16 and read
// back. F32 must come back bit for bit, F16 as each value's rounding to half; names, shapes and
// metadata exactly. The encoder may refuse only names or metadata that are not UTF-8.
#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "attn/error.hpp"
#include "attn/safetensors.hpp"
#include "core/half.hpp"
#include "fuzz_check.hpp"
#include "io/vectors_readers.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  attn::fuzz::byte_reader in(data, size);
  const auto dtype = in.byte() % 2 == 1 ? attn::safetensors_dtype::f16 : attn::safetensors_dtype::f32;
  attn::safetensors_file file;
  const int tensors = in.in_range(0, 4);
  for (int i = 0; i < tensors; ++i) {
    std::string name = in.text(24);
    if (name == "__metadata__") return 0;  // reserved; the encoder's refusal is tested elsewhere
    attn::shape_t shape(in.in_range(0, 3));
    size_t count = 1;
    for (auto& d : shape) {
      d = in.in_range(0, 6);
      count *= static_cast<size_t>(d);
    }
    std::vector<float> values(count);
    for (float& v : values) v = std::bit_cast<float>(in.u32());
    file.tensors[std::move(name)] = attn::tensor(std::move(shape), std::move(values));
  }
  const int entries = in.in_range(0, 2);
  for (int i = 0; i < entries; ++i) {
    std::string key = in.text(12), value = in.text(24);
    file.metadata[std::move(key)] = std::move(value);
  }

  // Judged on what is in the maps: a later entry may replace an earlier one of the same name.
  bool encodable = true;
  for (const auto& [name, t] : file.tensors) encodable = encodable && attn::io::is_valid_utf8(name);
  for (const auto& [key, value] : file.metadata)
    encodable = encodable && attn::io::is_valid_utf8(key) && attn::io::is_valid_utf8(value);

  std::string bytes;
  try {
    bytes = attn::encode_safetensors(file, dtype);
  } catch (const attn::error& e) {
    attn::fuzz::require(!encodable && e.kind() == attn::error_kind::usage,
                        "the encoder refuses only non-UTF-8 names or metadata");
    return 0;
  }
  attn::fuzz::require(encodable, "the encoder refuses non-UTF-8 names or metadata");
  attn::fuzz::require(bytes.size() >= 8 && static_cast<unsigned char>(bytes[0]) % 8 == 0,
                      "the header is padded to a multiple of 8 bytes");

  const attn::safetensors_file back = attn::parse_safetensors(bytes, "fuzz (round trip)");
  attn::fuzz::require(back.metadata == file.metadata, "metadata survives");
  attn::fuzz::require(back.tensors.size() == file.tensors.size(), "every tensor survives");
  for (const auto& [name, t] : file.tensors) {
    const auto it = back.tensors.find(name);
    attn::fuzz::require(it != back.tensors.end(), "names survive");
    attn::fuzz::require(it->second.shape() == t.shape(), "shapes survive");
    const std::span<const float> a = t.values(), b = it->second.values();
    for (size_t i = 0; i < a.size(); ++i) {
      const float expected = dtype == attn::safetensors_dtype::f32
                                 ? a[i]
                                 : attn::half_to_float(attn::float_to_half(a[i]));
      attn::fuzz::require(std::bit_cast<uint32_t>(expected) == std::bit_cast<uint32_t>(b[i]),
                          "values survive bit for bit (F16: as rounded to half)");
    }
  }
  return 0;
}
