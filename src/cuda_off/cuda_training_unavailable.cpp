// attn built without CUDA: --device cuda's training is a usage error (check_device_options says
// so before any data is read; this is the factory's stand-in).
#include "attn/error.hpp"
#include "train/device_training.hpp"

namespace attn::train {

std::unique_ptr<device_training> make_cuda_training(models::network<float>&, const train_options&) {
  throw_usage("--device cuda: this attn was built without CUDA (cmake -DATTN_CUDA=ON; docs/GPU.md)");
}

}  // namespace attn::train
