// When an element-wise pass of the layers (layer norm, ReLU, dropout, head reshapes) is worth
// both threads. A language-model step runs dozens of them on [4096, 100] activations; done on one
// thread they left the other idle for about a third of the step. Each element's result does not
// depend on which thread computes it, so the bits are the same with any thread count.
#pragma once

#include <cstdint>

namespace attn::nn {

// 32k elements: about 10–30 µs on one core, well above what a fork of the waiting threads costs.
inline bool worth_threads_elementwise(int64_t elements) { return elements >= (int64_t{1} << 15); }

}  // namespace attn::nn
