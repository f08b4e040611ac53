// Training allocates and frees the same large buffers every step (gradients of activations,
// scratch of the backward). glibc hands blocks above a moving threshold back to the kernel on
// free and maps them afresh on the next step, so a step of the default language model spent
// about a sixth of its time in page faults. Fixing the threshold keeps them in the heap.
#pragma once

namespace attn::train {

// Blocks up to glibc's largest threshold (32 MiB) come from the heap, and the heap is not
// trimmed below 1 GiB of free space: memory freed by one step is reused by the next. Process-wide
// (mallopt); called once by train_text_model; nothing elsewhere than glibc.
void keep_freed_memory_for_reuse();

}  // namespace attn::train
