// NumPy .npy files: float32 ('<f4') and bool ('|b1'), C order, format versions 1.0–3.0 read,
// 1.0 written. Anything else is rejected with an input error naming the file and byte offset.
#pragma once

#include <string>

#include "attn/tensor.hpp"

namespace attn {

enum class npy_dtype { f32, boolean };

struct npy_array {
  npy_dtype dtype = npy_dtype::f32;
  tensor values;  // bool arrays hold 0.0f / 1.0f
};

npy_array read_npy(const std::string& path);
npy_array parse_npy(const std::string& bytes, const std::string& source);  // source: for errors

// Serialises a tensor as a v1.0 '<f4' .npy (or '|b1' when dtype is boolean: nonzero = True).
std::string encode_npy(const tensor& t, npy_dtype dtype = npy_dtype::f32);

}  // namespace attn
