// attn::keep_freed_memory_for_reuse (attn/train.hpp): training allocates and frees the same large
// buffers every step (gradients of activations, scratch of the backward); glibc hands blocks above a
// moving threshold back to the kernel on free and maps them afresh on the next step, so a step of
// the default language model spent about a sixth of its time in page faults.
#include "attn/train.hpp"

#include <cstdlib>  // defines __GLIBC__ where glibc is the C library

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace attn {

void keep_freed_memory_for_reuse() {
#if defined(__GLIBC__)
  // Setting either turns off glibc's dynamic threshold, which follows the largest block freed
  // and trims the heap top past twice that. 32 MiB is the most glibc accepts (64-bit).
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif
}

}  // namespace attn
