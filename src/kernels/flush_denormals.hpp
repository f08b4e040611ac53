// Subnormal floats (magnitudes below 2^-126) are slow on x86: an instruction that reads or makes
// one takes a microcode assist of a hundred cycles or more. They appear in training as attention
// sharpens: a softmax weight near 2^-126 times a small gradient underflows, and the attention
// backward's inner update went from 6.7% to 15.8% of the built-in language model's training
// step within a quarter of an hour (docs/LM.md). For the duration of a kernel, on the thread
// that runs it, this sets the flush-to-zero and denormals-are-zero modes: a result below 2^-126
// becomes 0, and an input that small is read as 0 (no weight, activation or gradient worth
// keeping is that small); the thread's own mode is restored afterwards.
#pragma once

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

namespace attn::kernels {

class denormals_flushed {
 public:
#if defined(__x86_64__) || defined(__i386__)
  denormals_flushed() : saved_(_mm_getcsr()) { _mm_setcsr(saved_ | flush_to_zero | denormals_are_zero); }
  ~denormals_flushed() { _mm_setcsr(saved_); }
#endif
  denormals_flushed(const denormals_flushed&) = delete;
  denormals_flushed& operator=(const denormals_flushed&) = delete;

 private:
#if defined(__x86_64__) || defined(__i386__)
  static constexpr unsigned flush_to_zero = 0x8000, denormals_are_zero = 0x0040;  // MXCSR bits
  unsigned saved_;
#endif
};

}  // namespace attn::kernels
