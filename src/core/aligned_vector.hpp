// A std::vector whose storage starts on a 64-byte line: a kernel may then write it a whole cache
// line at a time (kernels::gemm_bf16's streamed stores into a large C).
#pragma once

#include <cstddef>
#include <new>
#include <vector>

namespace attn {

template <class T>
struct line_aligned_allocator {
  using value_type = T;
  line_aligned_allocator() = default;
  template <class U>
  line_aligned_allocator(const line_aligned_allocator<U>&) {}
  T* allocate(std::size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t(64))); }
  void deallocate(T* p, std::size_t) { ::operator delete(p, std::align_val_t(64)); }
  template <class U>
  bool operator==(const line_aligned_allocator<U>&) const { return true; }
};

template <class T>
using aligned_vector = std::vector<T, line_aligned_allocator<T>>;

}  // namespace attn
