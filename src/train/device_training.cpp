// The options --device cuda takes and those it does not run yet (device_training.hpp).
#include "train/device_training.hpp"

#include "attn/cuda.hpp"
#include "attn/error.hpp"

namespace attn::train {

void check_device_options(const train_options& o) {
  if (o.device != train_device::cuda) return;
  if (!cuda::built())
    throw_usage("--device cuda: this attn was built without CUDA (cmake -DATTN_CUDA=ON; docs/GPU.md)");
  if (!cuda::available()) throw_usage("--device cuda: no CUDA device answers on this machine");
  // The optimiser's state lives on the device: a checkpoint would need it back (not yet).
  if (o.resume || o.stop_after_steps > 0)
    throw_usage("--device cuda keeps no checkpoint yet (no --resume or --stop-after-steps)");
  if (o.shards > 1) throw_usage("--device cuda runs each batch whole (no --shards)");
  if (!o.adaptive_softmax.empty()) throw_usage("--device cuda runs the full softmax (no --adaptive-softmax)");
}

}  // namespace attn::train
