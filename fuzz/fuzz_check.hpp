// What every fuzz target shares: a property check that stops the run loudly in any build (libFuzzer
// reports the abort as a crash and keeps the input), and a reader that turns the fuzzer's bytes
// into choices (our own small FuzzedDataProvider, so the replay build needs no clang headers).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace attn::fuzz {

inline void require(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz property failed: %s\n", what);
    std::abort();
  }
}

// Choices from the front of the input; past its end every choice is 0.
class byte_reader {
 public:
  byte_reader(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  uint8_t byte() {
    if (size_ == 0) return 0;
    --size_;
    return *data_++;
  }
  uint32_t u32() {
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(byte()) << (8 * i);
    return v;
  }
  int in_range(int lo, int hi) { return lo + byte() % (hi - lo + 1); }
  std::string text(size_t max_length) {
    const size_t length = std::min<size_t>(byte() % (max_length + 1), size_);
    std::string s(reinterpret_cast<const char*>(data_), length);
    data_ += length;
    size_ -= length;
    return s;
  }

 private:
  const uint8_t* data_;
  size_t size_;
};

}  // namespace attn::fuzz
