// A kernel launch's failure as an exception naming the kernel (launches return no status: CUDA
// keeps the last error), and the shared memory a launch asks for.
#pragma once

#include <cuda_runtime.h>

#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>

namespace attn::cuda_kernels {

inline void check_launch(const char* what) {
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

// Whether `kernel`'s shared-memory limit has been raised on `device` (mark: it now has been).
// One registry for every kernel, keyed by the kernel's address: two kernels of one signature
// share a function-pointer type, so a per-type flag would answer for the wrong one.
inline bool shared_limit_raised(const void* kernel, int device, bool mark = false) {
  static std::mutex guard;
  static std::set<std::pair<const void*, int>> raised;
  std::lock_guard<std::mutex> lock(guard);
  if (mark) raised.insert({kernel, device});
  return raised.count({kernel, device}) != 0;
}

// A kernel's dynamic shared memory above the default 48 KB must be asked for, once per kernel
// and device (the setting belongs to the device current when it is made). Remembered, so that
// a warm call costs no driver round trip on the host (cudaDeviceReset would void it; attn never
// calls it).
template <typename K>
void allow_shared(K kernel, int bytes, const char* what) {
  const void* key = reinterpret_cast<const void*>(kernel);
  int device = -1;
  const bool known = cudaGetDevice(&device) == cudaSuccess;
  if (known && shared_limit_raised(key, device)) return;
  const cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
  if (known) shared_limit_raised(key, device, true);
}

}  // namespace attn::cuda_kernels
