// Loading multi-head attention from a file: a safetensors file holding PyTorch's state dict.
// Kept apart from the layer itself so that the layer does not depend on file formats.
#include "attn/multihead_attention.hpp"
#include "attn/safetensors.hpp"

namespace attn {

multihead_attention multihead_attention::load(const std::string& path, int64_t num_heads) {
  const safetensors_file file = read_safetensors(path);
  return from_state_dict(file.tensors, num_heads, path);
}

}  // namespace attn
