#include "kernels/scratch_vectors.hpp"

namespace attn::kernels {

void resize_scratch(std::vector<float>& v, size_t n) { v.resize(n); }
void resize_scratch(std::vector<uint32_t>& v, size_t n) { v.resize(n); }
void resize_scratch(std::vector<uint16_t>& v, size_t n) { v.resize(n); }

}  // namespace attn::kernels
