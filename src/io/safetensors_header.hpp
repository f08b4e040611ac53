// The JSON header of a safetensors file, read and checked: tensor names, dtypes, shapes, byte
// ranges and __metadata__. Whether the byte ranges tile the data buffer is the caller's check.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "attn/tensor.hpp"

namespace attn::io {

enum class stored_dtype { f32, f16, bf16 };

// One tensor's entry, checked: `count` elements of `dtype` in shape `shape`, stored in bytes
// [begin, end) of the data buffer (end − begin = count × the dtype's size).
struct tensor_entry {
  stored_dtype dtype = stored_dtype::f32;
  shape_t shape;
  uint64_t count = 0;
  uint64_t begin = 0, end = 0;
};

struct safetensors_header {
  std::map<std::string, tensor_entry> tensors;  // by name
  std::map<std::string, std::string> metadata;  // "__metadata__"
};

// The header's JSON text, which the file holds from byte 8 on (messages count bytes from the
// start of the file). The caller has checked that it is UTF-8 without NUL bytes. Throws an input
// error for the first problem: invalid JSON, then a repeated key, then the first bad entry in
// name order.
safetensors_header read_safetensors_header(std::string_view header, const std::string& source);

inline std::string tensor_where(const std::string& name) {
  return fmt::format("tensor '{}'", name);
}

}  // namespace attn::io
