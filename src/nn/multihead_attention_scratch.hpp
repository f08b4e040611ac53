// Memory for multi-head attention's intermediates (Q | K | V, the concatenated heads), kept per
// thread from call to call. Fresh tensors of that size (megabytes) came from the kernel page by
// page on every call: on 8×256×768 the page faults and zeroing took about a tenth of the layer's
// time, all on one thread while the other waited. Grows to the largest call a thread has made.
#pragma once

#include <cstddef>
#include <memory>

namespace attn::nn {

enum class mha_scratch_slot { qkv, heads, count };

// n floats, uninitialized, valid until the calling thread asks for the same slot again.
inline float* mha_scratch(mha_scratch_slot slot, size_t n) {
  constexpr int slots = static_cast<int>(mha_scratch_slot::count);
  thread_local std::unique_ptr<float[]> buffers[slots];
  thread_local size_t sizes[slots] = {};
  const int i = static_cast<int>(slot);
  if (sizes[i] < n) {
    buffers[i].reset();  // the old one first: the peak stays one buffer
    buffers[i].reset(new float[n]);
    sizes[i] = n;
  }
  return buffers[i].get();
}

}  // namespace attn::nn
