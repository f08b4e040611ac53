// attn::cuda in a build without CUDA (-DATTN_CUDA=OFF, the default): the API is there, and
// says how to get it.
#include "attn/cuda.hpp"
#include "attn/error.hpp"

namespace attn::cuda {

namespace {
[[noreturn]] void not_built() {
  throw_usage("this attn was built without CUDA: rebuild with cmake -DATTN_CUDA=ON (docs/GPU.md)");
}
}  // namespace

bool built() { return false; }
bool available() { return false; }
std::string device_name() { not_built(); }
void check_shapes(const tensor&, const tensor&, const tensor&, const tensor*) { not_built(); }
precision parse_precision(const std::string&) { not_built(); }
const char* precision_name(precision) { not_built(); }
std::string forward_path(precision, int64_t, int64_t) { not_built(); }
tensor sdpa(const tensor&, const tensor&, const tensor&, const sdpa_options&, precision, tensor*) { not_built(); }
sdpa_gradients sdpa_backward(const tensor&, const tensor&, const tensor&, const tensor&, const tensor&,
                             const tensor&, const sdpa_options&, precision) {
  not_built();
}
tensor mha(const multihead_attention&, const tensor&, const tensor&, const tensor&, const mha_options&, precision) {
  not_built();
}
timing time_sdpa(int64_t, int64_t, int64_t, int64_t, bool, precision, int, bool) { not_built(); }

}  // namespace attn::cuda
