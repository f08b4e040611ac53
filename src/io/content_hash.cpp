#include "io/content_hash.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

namespace attn::io {

namespace {

// Odd constants with well-mixed bits (the golden ratio's, and a multiplier of splitmix64's).
constexpr uint64_t k1 = 0x9E3779B97F4A7C15u;
constexpr uint64_t k2 = 0xBF58476D1CE4E5B9u;

uint64_t rotate_left(uint64_t x, int bits) { return (x << bits) | (x >> (64 - bits)); }

// Little-endian whatever the machine, so ranks on different machines compute the same hash.
uint64_t load_word(const unsigned char* p) {
  uint64_t w = 0;
  for (int i = 7; i >= 0; --i) w = (w << 8) | p[i];
  return w;
}

// A final mix in which every input bit reaches every output bit (splitmix64's finaliser).
uint64_t avalanche(uint64_t x) {
  x ^= x >> 30;
  x *= k2;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBu;
  return x ^ (x >> 31);
}

}  // namespace

void content_hash::take_block(const unsigned char* block) {
  for (int lane = 0; lane < 4; ++lane)
    lanes_[lane] = rotate_left(lanes_[lane] + load_word(block + 8 * lane) * k1, 31) * k2;
}

void content_hash::update(const char* bytes, size_t n) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes);
  size_ += n;
  if (pending_size_ > 0) {  // complete the block an earlier piece began
    const size_t take = std::min(n, sizeof pending_ - pending_size_);
    std::memcpy(pending_ + pending_size_, p, take);
    pending_size_ += take, p += take, n -= take;
    if (pending_size_ < sizeof pending_) return;
    take_block(pending_);
    pending_size_ = 0;
  }
  for (; n >= sizeof pending_; p += sizeof pending_, n -= sizeof pending_) take_block(p);
  std::memcpy(pending_, p, n);
  pending_size_ = n;
}

uint64_t content_hash::value() const {
  uint64_t h = size_ * k1;
  for (uint64_t lane : lanes_) h = rotate_left(h ^ avalanche(lane), 27) * k1;
  for (size_t i = 0; i < pending_size_; ++i) h = (h ^ pending_[i]) * k2;
  return avalanche(h);
}

uint64_t hash_bytes(const char* bytes, size_t n) {
  content_hash h;
  h.update(bytes, n);
  return h.value();
}

std::string file_digest::describe() const {
  return readable ? fmt::format("{} bytes, hash {:016x}", size, hash) : problem;
}

file_digest digest_file(const std::string& path) {
  file_digest d;
  const std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "rb"),
                                                          std::fclose);
  if (!f) {
    d.problem = fmt::format("cannot open: {}", std::strerror(errno));
    return d;
  }
  std::vector<char> chunk(size_t{1} << 20);
  content_hash h;
  while (const size_t n = std::fread(chunk.data(), 1, chunk.size(), f.get()))
    h.update(chunk.data(), n);
  if (std::ferror(f.get())) {
    d.problem = fmt::format("cannot read: {}", std::strerror(errno));
    return d;
  }
  d.readable = true, d.size = h.size(), d.hash = h.value();
  return d;
}

}  // namespace attn::io
