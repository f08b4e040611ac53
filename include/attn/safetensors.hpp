// safetensors files: u64 little-endian header length N, N bytes of JSON, then the data buffer.
// Reads F32, F16 and BF16 tensors (converted to float32); writes F32 (or F16).
// Every offset, size and shape is checked before any tensor byte is read.
#pragma once

#include <map>
#include <string>

#include "attn/tensor.hpp"

namespace attn {

struct safetensors_file {
  std::map<std::string, tensor> tensors;
  std::map<std::string, std::string> metadata;  // "__metadata__"
};

safetensors_file read_safetensors(const std::string& path);
safetensors_file parse_safetensors(const std::string& bytes, const std::string& source);

enum class safetensors_dtype { f32, f16 };
std::string encode_safetensors(const safetensors_file& file,
                               safetensors_dtype dtype = safetensors_dtype::f32);

}  // namespace attn
