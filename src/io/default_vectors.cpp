// The embedded default vectors: the bytes default_vectors.S assembles into the library, read in
// place (their word table and, being float16, widened values) with no file to find at run time.
#include <span>

#include "attn/vectors.hpp"

// The assembler's symbols mark the first byte and one past the last; hidden, as in the .S file,
// so that position-independent code reaches them directly rather than through the GOT.
extern "C" __attribute__((visibility("hidden"))) const unsigned char attn_default_vectors_begin[];
extern "C" __attribute__((visibility("hidden"))) const unsigned char attn_default_vectors_end[];

namespace attn {

vectors vectors::load_default() {
  const std::span<const unsigned char> bytes(
      attn_default_vectors_begin,
      static_cast<size_t>(attn_default_vectors_end - attn_default_vectors_begin));
  return from_attnvec_bytes(bytes, "<default>");
}

}  // namespace attn
