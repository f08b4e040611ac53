// The oracle tools' .npy files (attention_layer_npy.cpp, translator_npy.cpp): DIR/NAME.npy read
// as a contiguous tensor, float values written back beside them.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "attn/npy.hpp"

namespace attn::oracle {

inline attn::tensor read_npy_file(const std::filesystem::path& dir, const std::string& name) {
  return attn::read_npy((dir / (name + ".npy")).string()).values.contiguous();
}

inline void write_npy_file(const std::filesystem::path& dir, const std::string& name, std::vector<float>& values,
                           const attn::shape_t& shape) {
  std::ofstream out(dir / (name + ".npy"), std::ios::binary);
  out << attn::encode_npy(attn::tensor::view(values.data(), shape));
}

}  // namespace attn::oracle
