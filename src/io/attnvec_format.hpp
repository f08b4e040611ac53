// The .attnvec file: attn's own word-vector format, made to be mapped with mmap and used as is.
// All integers little-endian.
//
//   offset  size  field
//   0       8     magic "ATTNVEC1"
//   8       4     u32 version = 1
//   12      4     u32 dtype: 1 = float32, 2 = float16 (IEEE binary16)
//   16      8     u64 count   (words)
//   24      8     u64 dim     (values per word)
//   32      8     u64 words_offset   (64: right after this header)
//   40      8     u64 words_bytes    (the word table: count UTF-8 words, each ended by '\n')
//   48      8     u64 vectors_offset (a multiple of 64, ≥ words_offset + words_bytes)
//   56      8     zero
//   vectors_offset: count × dim values, row-major; the file ends right after them.
//
// Words are in the order given (frequency order for the default), so `--top N` keeps the N
// most frequent. scripts/make_default_vectors.py writes the same layout.
#pragma once

#include <cstdint>

namespace attn::attnvec {

inline constexpr char magic[8] = {'A', 'T', 'T', 'N', 'V', 'E', 'C', '1'};
inline constexpr uint32_t version = 1;
inline constexpr uint32_t dtype_f32 = 1;
inline constexpr uint32_t dtype_f16 = 2;
inline constexpr uint64_t header_size = 64;
inline constexpr uint64_t alignment = 64;

}  // namespace attn::attnvec
