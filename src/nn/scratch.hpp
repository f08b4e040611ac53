// Scratch arrays of the backward passes. std::vector<T>(n) writes n zeros on one thread before
// any work starts: in a language model's step, 20 such arrays of [4096, 100] floats a layer kept
// one thread busy while the other waited. Most scratch arrays are written whole next (a head
// reshape, the attention's gradients), so they need no zeros at all; the ones a backward pass
// adds into get them from both threads.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "nn/parallel_elements.hpp"

namespace attn::nn {

// An allocator whose elements start uninitialised (default-initialised, for float and double:
// indeterminate), for arrays that are written whole before they are read.
template <class T>
struct uninitialized_allocator : std::allocator<T> {
  template <class U>
  struct rebind {
    using other = uninitialized_allocator<U>;
  };
  template <class U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};

template <class T>
using scratch = std::vector<T, uninitialized_allocator<T>>;

// n zeros, written by the threads.
template <class T>
scratch<T> scratch_zeros(int64_t n) {
  scratch<T> v(static_cast<size_t>(n));
  T* p = v.data();
#pragma omp parallel for schedule(static) if (worth_threads_elementwise(n))
  for (int64_t i = 0; i < n; ++i) p[i] = T(0);
  return v;
}

// A copy of src[0 .. n), written by the threads.
template <class T>
scratch<T> scratch_copy(const T* src, int64_t n) {
  scratch<T> v(static_cast<size_t>(n));
  T* p = v.data();
#pragma omp parallel for schedule(static) if (worth_threads_elementwise(n))
  for (int64_t i = 0; i < n; ++i) p[i] = src[i];
  return v;
}

// src[i]·mask[i] for i < n, written by the threads: a gradient through a dropout mask in one pass
// (the bits of a copy followed by dropout_apply).
template <class T>
scratch<T> dropout_copy(const T* mask, const T* src, int64_t n) {
  scratch<T> v(static_cast<size_t>(n));
  T* p = v.data();
#pragma omp parallel for schedule(static) if (worth_threads_elementwise(n))
  for (int64_t i = 0; i < n; ++i) p[i] = src[i] * mask[i];
  return v;
}

// y[i] += x[i], by the threads.
template <class T>
void add_into(T* y, const T* x, int64_t n) {
#pragma omp parallel for schedule(static) if (worth_threads_elementwise(n))
  for (int64_t i = 0; i < n; ++i) y[i] += x[i];
}

}  // namespace attn::nn
