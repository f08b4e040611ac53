// What a file holds, in 24 bytes: its size and a 64-bit hash of its bytes. attn-mpi's ranks
// compare their copies of an input with it before any work (distributed/same_command.hpp), a
// training checkpoint holds the hash of its body and of the data it was made from (resumed only
// with the same bytes): the hash is for telling honest copies apart (a truncated, flipped or
// edited file), not a defence against forgery, so a fast one of our own, read in chunks, costs a
// small part of the reading the command does anyway.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace attn::io {

// The hash of a stream of bytes fed in pieces of any sizes: the same bytes give the same value
// however they were cut. Four lanes of 64 bits take the 8-byte words in turn (four independent
// multiplications, which the processor overlaps); the tail and the length are folded in last.
class content_hash {
 public:
  void update(const char* bytes, size_t n);
  uint64_t value() const;
  uint64_t size() const { return size_; }

 private:
  void take_block(const unsigned char* block);  // one block of 32 bytes, a word per lane
  uint64_t lanes_[4] = {0x243F6A8885A308D3u, 0x13198A2E03707344u, 0xA4093822299F31D0u,
                        0x082EFA98EC4E6C89u};  // digits of π: any distinct values would do
  unsigned char pending_[32] = {};             // the bytes of an incomplete block
  size_t pending_size_ = 0;
  uint64_t size_ = 0;
};

struct file_digest {
  bool readable = false;
  uint64_t size = 0, hash = 0;
  std::string problem;  // why it could not be read ("cannot open: No such file or directory")

  // "41230 bytes, hash 0123456789abcdef", or the problem: equal descriptions, equal digests.
  std::string describe() const;
};

// Reads the file at path in chunks (its whole contents are never in memory at once).
file_digest digest_file(const std::string& path);

// The hash of bytes held whole.
uint64_t hash_bytes(const char* bytes, size_t n);

}  // namespace attn::io
