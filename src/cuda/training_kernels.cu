// The training step's element-wise and row kernels (training_kernels.hpp). Each is written to be
// obviously the CPU piece's twin; every sum runs in a fixed order, so a step gives the same bits
// every run.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "cuda/device_math.cuh"
#include "cuda/element_types.cuh"
#include "cuda/launch_check.cuh"
#include "cuda/training_kernels.hpp"

namespace attn::cuda_kernels {

namespace {

cudaStream_t as_stream(void* s) { return static_cast<cudaStream_t>(s); }

__device__ __forceinline__ int64_t thread_index() {
  return blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
}
__device__ __forceinline__ int64_t thread_stride() { return int64_t(gridDim.x) * blockDim.x; }

__device__ __forceinline__ float warp_sum(float x) {
  for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
  return x;
}
__device__ __forceinline__ float warp_max(float x) {
  for (int o = 16; o > 0; o >>= 1) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
  return x;
}

// Rows of `width` floats: one warp a row, 8 rows a block of 256 threads.
inline unsigned row_blocks(int64_t rows) { return static_cast<unsigned>((rows + 7) / 8); }

__global__ void embed_kernel(const int32_t* __restrict__ ids, const float* __restrict__ table, int64_t split,
                             const float* __restrict__ extra, const float* __restrict__ positions,
                             float* __restrict__ x, int64_t tokens, int64_t length, int64_t width) {
  const int64_t n = tokens * width;
  for (int64_t i = thread_index(); i < n; i += thread_stride()) {
    const int64_t token = i / width, j = i % width;
    const int64_t id = ids[token];
    float value = id < 0 ? 0.0f : id < split ? table[id * width + j] : extra[(id - split) * width + j];
    if (positions != nullptr) value += positions[(token % length) * width + j];
    x[i] = value;
  }
}

__global__ void embed_backward_kernel(const float* __restrict__ dx, const int32_t* __restrict__ order,
                                      const int32_t* __restrict__ starts, const int32_t* __restrict__ unique_ids,
                                      float* __restrict__ dtable, int64_t split, float* __restrict__ dextra,
                                      int64_t width) {
  const int64_t group = blockIdx.x;
  const int64_t id = unique_ids[group];
  float* row = id < split ? (dtable != nullptr ? dtable + id * width : nullptr)
                          : (dextra != nullptr ? dextra + (id - split) * width : nullptr);
  if (row == nullptr) return;
  for (int64_t j = threadIdx.x; j < width; j += blockDim.x) {
    float sum = 0.0f;
    for (int32_t k = starts[group]; k < starts[group + 1]; ++k) sum += dx[static_cast<int64_t>(order[k]) * width + j];
    row[j] += sum;
  }
}

__global__ void positions_backward_kernel(const float* __restrict__ dx, float* __restrict__ dpositions,
                                          int64_t batch, int64_t length, int64_t width) {
  const int64_t n = length * width;
  for (int64_t i = thread_index(); i < n; i += thread_stride()) {
    float sum = 0.0f;
    for (int64_t b = 0; b < batch; ++b) sum += dx[b * n + i];
    dpositions[i] += sum;
  }
}

__global__ void gather_rows_kernel(const float* __restrict__ table, int64_t split, const float* __restrict__ extra,
                                   const int32_t* __restrict__ rows, float* __restrict__ out, int64_t count,
                                   int64_t width) {
  const int64_t n = count * width;
  for (int64_t i = thread_index(); i < n; i += thread_stride()) {
    const int64_t c = i / width, j = i % width, id = rows[c];
    out[i] = id < split ? table[id * width + j] : extra[(id - split) * width + j];
  }
}

__global__ void scatter_add_rows_kernel(const float* __restrict__ d, const int32_t* __restrict__ rows,
                                        float* __restrict__ dtable, int64_t split, float* __restrict__ dextra,
                                        int64_t count, int64_t width) {
  const int64_t n = count * width;
  for (int64_t i = thread_index(); i < n; i += thread_stride()) {
    const int64_t c = i / width, j = i % width, id = rows[c];
    float* to = id < split ? dtable : dextra;
    if (to == nullptr) continue;
    to[(id < split ? id : id - split) * width + j] += d[i];
  }
}

// nn/dropout.cpp's hash: splitmix64's finaliser.
__device__ __forceinline__ uint64_t mix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

__global__ void dropout_kernel(uint64_t base, double p, float keep, float* __restrict__ x, int64_t n) {
  for (int64_t i = thread_index(); i < n; i += thread_stride()) {
    const double u = static_cast<double>(mix(base ^ static_cast<uint64_t>(i)) >> 11) * 0x1.0p-53;
    x[i] = u < p ? x[i] * 0.0f : x[i] * keep;
  }
}

// One warp a row: the mean, then the squares about it (two passes, as the CPU's).
template <typename T>
__global__ void layer_norm_kernel(const float* __restrict__ x, const float* __restrict__ weight,
                                  const float* __restrict__ bias, float* __restrict__ y, T* __restrict__ y_product,
                                  float* __restrict__ mean, float* __restrict__ rstd, int64_t rows, int64_t width) {
  const int64_t row = blockIdx.x * 8 + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const float* in = x + row * width;
  float sum = 0.0f;
  for (int64_t j = lane; j < width; j += 32) sum += in[j];
  const float m = warp_sum(sum) / static_cast<float>(width);
  float squares = 0.0f;
  for (int64_t j = lane; j < width; j += 32) {
    const float d = in[j] - m;
    squares += d * d;
  }
  const float r = rsqrtf(warp_sum(squares) / static_cast<float>(width) + 1e-5f);
  for (int64_t j = lane; j < width; j += 32) {
    const float value = (in[j] - m) * r * weight[j] + bias[j];
    if (y != nullptr) y[row * width + j] = value;
    if (y_product != nullptr) y_product[row * width + j] = from_float<T>(value);
  }
  if (lane == 0) {
    mean[row] = m;
    rstd[row] = r;
  }
}

// dx = rstd·(g − mean(g) − x̂·mean(g·x̂)) with g = dy·weight.
__global__ void layer_norm_backward_kernel(const float* __restrict__ dy, const float* __restrict__ x,
                                           const float* __restrict__ weight, const float* __restrict__ mean,
                                           const float* __restrict__ rstd, float* __restrict__ dx, bool accumulate,
                                           int64_t rows, int64_t width) {
  const int64_t row = blockIdx.x * 8 + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const float m = mean[row], r = rstd[row];
  const float* d = dy + row * width;
  const float* in = x + row * width;
  float g_sum = 0.0f, gx_sum = 0.0f;
  for (int64_t j = lane; j < width; j += 32) {
    const float g = d[j] * weight[j];
    g_sum += g;
    gx_sum += g * (in[j] - m) * r;
  }
  const float g_mean = warp_sum(g_sum) / static_cast<float>(width);
  const float gx_mean = warp_sum(gx_sum) / static_cast<float>(width);
  float* out = dx + row * width;
  for (int64_t j = lane; j < width; j += 32) {
    const float g = d[j] * weight[j];
    const float value = r * (g - g_mean - (in[j] - m) * r * gx_mean);
    out[j] = accumulate ? out[j] + value : value;
  }
}

// Column sums in two passes: blocks of 32 columns × a chunk of rows write partial sums
// [chunks, width]; a second kernel adds the chunks in order. mode 0: Σ d; mode 1: Σ d·x̂ and Σ d.
constexpr int64_t chunk_rows = 256;
constexpr int64_t max_chunks = 64;

template <typename T>
__global__ void column_partials_kernel(const T* __restrict__ d, const float* __restrict__ x,
                                       const float* __restrict__ mean, const float* __restrict__ rstd,
                                       float* __restrict__ partial, float* __restrict__ partial2, int64_t rows,
                                       int64_t width, int64_t rows_per_chunk) {
  __shared__ float s1[8][33], s2[8][33];
  const int64_t col = blockIdx.x * 32 + threadIdx.x % 32;
  const int ty = threadIdx.x / 32;
  const int64_t begin = blockIdx.y * rows_per_chunk;
  const int64_t end = begin + rows_per_chunk < rows ? begin + rows_per_chunk : rows;
  float a = 0.0f, b = 0.0f;
  if (col < width)
    for (int64_t row = begin + ty; row < end; row += 8) {
      const float g = to_float(d[row * width + col]);
      if (x != nullptr) {
        a += g * (x[row * width + col] - mean[row]) * rstd[row];
        b += g;
      } else {
        a += g;
      }
    }
  s1[ty][threadIdx.x % 32] = a;
  s2[ty][threadIdx.x % 32] = b;
  __syncthreads();
  if (ty == 0 && col < width) {
    float sa = 0.0f, sb = 0.0f;
    for (int k = 0; k < 8; ++k) {
      sa += s1[k][threadIdx.x];
      sb += s2[k][threadIdx.x];
    }
    partial[blockIdx.y * width + col] = sa;
    if (partial2 != nullptr) partial2[blockIdx.y * width + col] = sb;
  }
}

__global__ void column_finish_kernel(const float* __restrict__ partial, float* __restrict__ out, int64_t chunks,
                                     int64_t width) {
  for (int64_t col = thread_index(); col < width; col += thread_stride()) {
    float sum = 0.0f;
    for (int64_t c = 0; c < chunks; ++c) sum += partial[c * width + col];
    out[col] += sum;
  }
}

template <typename T>
void column_pass(const T* d, const float* x, const float* mean, const float* rstd, float* out, float* out2,
                 float* workspace, int64_t rows, int64_t width, void* s) {
  if (rows == 0 || width == 0) return;
  int64_t chunks = (rows + chunk_rows - 1) / chunk_rows;
  if (chunks > max_chunks) chunks = max_chunks;
  const int64_t per_chunk = (rows + chunks - 1) / chunks;
  chunks = (rows + per_chunk - 1) / per_chunk;
  float* partial2 = out2 != nullptr ? workspace + max_chunks * width : nullptr;
  const dim3 grid(static_cast<unsigned>((width + 31) / 32), static_cast<unsigned>(chunks));
  column_partials_kernel<T><<<grid, 256, 0, as_stream(s)>>>(d, x, mean, rstd, workspace, partial2, rows, width,
                                                             per_chunk);
  column_finish_kernel<<<grid_stride_blocks(width), 256, 0, as_stream(s)>>>(workspace, out, chunks, width);
  if (out2 != nullptr)
    column_finish_kernel<<<grid_stride_blocks(width), 256, 0, as_stream(s)>>>(partial2, out2, chunks, width);
}

__global__ void add_bias_kernel(float* __restrict__ y, const float* __restrict__ bias,
                                const float* __restrict__ residual, int64_t n, int64_t width) {
  for (int64_t i = thread_index(); i < n; i += thread_stride())
    y[i] = residual != nullptr ? y[i] + bias[i % width] + residual[i] : y[i] + bias[i % width];
}

template <typename T>
__global__ void bias_relu_kernel(const T* __restrict__ pre, const float* __restrict__ bias, T* __restrict__ act,
                                 int64_t n, int64_t width) {
  for (int64_t i = thread_index(); i < n; i += thread_stride()) {
    const float v = to_float(pre[i]) + bias[i % width];
    act[i] = from_float<T>(v > 0.0f ? v : 0.0f);
  }
}

template <typename T>
__global__ void relu_backward_kernel(const T* __restrict__ dact, const T* __restrict__ act, T* __restrict__ dpre,
                                     int64_t n) {
  for (int64_t i = thread_index(); i < n; i += thread_stride())
    dpre[i] = to_float(act[i]) > 0.0f ? dact[i] : from_float<T>(0.0f);
}

__global__ void add_into_kernel(float* __restrict__ y, const float* __restrict__ x, int64_t n) {
  for (int64_t i = thread_index(); i < n; i += thread_stride()) y[i] += x[i];
}

// rows [B·L, parts·E] ↔ heads [B, H, L, D], one element a thread.
template <typename In, typename T>
__global__ void rows_to_heads_kernel(const In* __restrict__ rows, const float* __restrict__ bias, int64_t parts, T* q,
                                     T* k, T* v, int64_t batch, int64_t length, int64_t heads, int64_t dim) {
  const int64_t width = heads * dim, n = batch * length * parts * width;
  for (int64_t i = thread_index(); i < n; i += thread_stride()) {
    const int64_t token = i / (parts * width), rest = i % (parts * width);
    const int64_t part = rest / width, j = rest % width, h = j / dim, d = j % dim;
    const int64_t b = token / length, t = token % length;
    T* to = part == 0 ? q : part == 1 ? k : v;
    const float value = to_float(rows[i]) + (bias != nullptr ? bias[rest] : 0.0f);
    to[((b * heads + h) * length + t) * dim + d] = from_float<T>(value);
  }
}

template <typename T>
__global__ void heads_to_rows_kernel(const T* q, const T* k, const T* v, int64_t parts, T* __restrict__ rows,
                                     int64_t batch, int64_t length, int64_t heads, int64_t dim) {
  const int64_t width = heads * dim, n = batch * length * parts * width;
  for (int64_t i = thread_index(); i < n; i += thread_stride()) {
    const int64_t token = i / (parts * width), rest = i % (parts * width);
    const int64_t part = rest / width, j = rest % width, h = j / dim, d = j % dim;
    const int64_t b = token / length, t = token % length;
    const T* from = part == 0 ? q : part == 1 ? k : v;
    rows[i] = from[((b * heads + h) * length + t) * dim + d];
  }
}

__global__ void padding_mask_kernel(const int32_t* __restrict__ lengths, float* __restrict__ mask, int64_t batch,
                                    int64_t keys) {
  const int64_t n = batch * keys;
  for (int64_t i = thread_index(); i < n; i += thread_stride())
    mask[i] = i % keys < lengths[i / keys] ? 0.0f : -INFINITY;
}

__global__ void gather_token_rows_kernel(const float* __restrict__ y, const int32_t* __restrict__ index,
                                         float* __restrict__ out, int64_t rows, int64_t width) {
  const int64_t n = rows * width;
  for (int64_t i = thread_index(); i < n; i += thread_stride())
    out[i] = y[static_cast<int64_t>(index[i / width]) * width + i % width];
}

__global__ void scatter_token_rows_kernel(const float* __restrict__ d, const int32_t* __restrict__ index,
                                          float* __restrict__ dy, int64_t rows, int64_t width) {
  const int64_t n = rows * width;
  for (int64_t i = thread_index(); i < n; i += thread_stride())
    dy[static_cast<int64_t>(index[i / width]) * width + i % width] += d[i];
}

// One block of 256 threads a row: max, Σ exp, then the gradient in place (each logit + its bias).
template <typename T>
__global__ void softmax_cross_entropy_kernel(T* __restrict__ logits, const float* __restrict__ bias,
                                             const int32_t* __restrict__ targets, float* __restrict__ row_loss,
                                             float scale, int64_t classes) {
  __shared__ float reduce[8];
  __shared__ float target_logit;
  const int64_t row = blockIdx.x;
  T* zt = logits + row * classes;
  const auto z = [&](int64_t j) { return to_float(zt[j]) + bias[j]; };
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  float m = -INFINITY;
  const int64_t target = targets[row];
  if (threadIdx.x == 0) target_logit = target >= 0 ? z(target) : 0.0f;
  for (int64_t j = threadIdx.x; j < classes; j += blockDim.x) m = fmaxf(m, z(j));
  m = warp_max(m);
  if (lane == 0) reduce[warp] = m;
  __syncthreads();
  m = reduce[0];
  for (int k = 1; k < 8; ++k) m = fmaxf(m, reduce[k]);
  __syncthreads();
  float sum = 0.0f;
  for (int64_t j = threadIdx.x; j < classes; j += blockDim.x) sum += expf(z(j) - m);
  sum = warp_sum(sum);
  if (lane == 0) reduce[warp] = sum;
  __syncthreads();
  sum = 0.0f;
  for (int k = 0; k < 8; ++k) sum += reduce[k];
  const float lse = m + logf(sum);
  if (threadIdx.x == 0) row_loss[row] = target >= 0 ? lse - target_logit : 0.0f;
  for (int64_t j = threadIdx.x; j < classes; j += blockDim.x) {
    const float p = target >= 0 ? expf(z(j) - lse) : 0.0f;
    zt[j] = from_float<T>((p - (j == target ? 1.0f : 0.0f)) * scale);
  }
}

template <typename T>
__global__ void score_rows_kernel(const T* __restrict__ logits, const float* __restrict__ bias,
                                  const int32_t* __restrict__ targets, float* __restrict__ row_loss,
                                  int32_t* __restrict__ row_rank, int64_t classes) {
  __shared__ float reduce[8];
  __shared__ int ranks[8];
  const int64_t row = blockIdx.x;
  const T* zt_row = logits + row * classes;
  const auto z = [&](int64_t j) { return to_float(zt_row[j]) + bias[j]; };
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int64_t target = targets[row];
  const float zt = target >= 0 ? z(target) : 0.0f;
  float m = -INFINITY;
  int above = 0;
  for (int64_t j = threadIdx.x; j < classes; j += blockDim.x) {
    const float zj = z(j);
    m = fmaxf(m, zj);
    above += (j < target ? zj >= zt : j > target && zj > zt) ? 1 : 0;
  }
  m = warp_max(m);
  for (int o = 16; o > 0; o >>= 1) above += __shfl_xor_sync(0xffffffffu, above, o);
  if (lane == 0) {
    reduce[warp] = m;
    ranks[warp] = above;
  }
  __syncthreads();
  m = reduce[0];
  above = ranks[0];
  for (int k = 1; k < 8; ++k) {
    m = fmaxf(m, reduce[k]);
    above += ranks[k];
  }
  __syncthreads();
  float sum = 0.0f;
  for (int64_t j = threadIdx.x; j < classes; j += blockDim.x) sum += expf(z(j) - m);
  sum = warp_sum(sum);
  if (lane == 0) reduce[warp] = sum;
  __syncthreads();
  if (threadIdx.x == 0) {
    float total = 0.0f;
    for (int k = 0; k < 8; ++k) total += reduce[k];
    row_loss[row] = target >= 0 ? m + logf(total) - zt : 0.0f;
    row_rank[row] = target >= 0 ? above : -1;
  }
}

// One block: the rows' losses in a fixed order (each thread a strided run, then the threads in
// order), in double.
__global__ void sum_loss_kernel(const float* __restrict__ row_loss, int64_t rows, double* __restrict__ out) {
  __shared__ double partial[256];
  double sum = 0.0;
  for (int64_t i = threadIdx.x; i < rows; i += blockDim.x) sum += static_cast<double>(row_loss[i]);
  partial[threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.x == 0) {
    double total = 0.0;
    for (int k = 0; k < 256; ++k) total += partial[k];
    *out = total;
  }
}

constexpr int norm_blocks = 1024;

__global__ void squares_kernel(const float* __restrict__ g, int64_t n, double* __restrict__ partial) {
  __shared__ double lanes[256];
  double sum = 0.0;
  for (int64_t i = thread_index(); i < n; i += thread_stride()) sum += static_cast<double>(g[i]) * g[i];
  lanes[threadIdx.x] = sum;
  __syncthreads();
  for (int half = 128; half > 0; half >>= 1) {
    if (threadIdx.x < half) lanes[threadIdx.x] += lanes[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[blockIdx.x] = lanes[0];
}

__global__ void clip_scale_kernel(const double* __restrict__ partial, int blocks, double max_norm,
                                  float* __restrict__ scale) {
  double sum = 0.0;
  for (int k = 0; k < blocks; ++k) sum += partial[k];
  const double norm = sqrt(sum);
  *scale = max_norm > 0 && norm > max_norm ? static_cast<float>(max_norm / norm) : 1.0f;
}

__global__ void adamw_kernel(float* __restrict__ w, const float* __restrict__ grad, float* __restrict__ m,
                             float* __restrict__ v, int64_t n, const float* __restrict__ scale, float decay,
                             float step_size, float inv_c2, float b1, float b2, float eps) {
  const float s = *scale;
  for (int64_t i = thread_index(); i < n; i += thread_stride()) {
    const float g = s == 1.0f ? grad[i] : grad[i] * s;
    const float mi = b1 * m[i] + (1.0f - b1) * g;
    const float vi = b2 * v[i] + (1.0f - b2) * g * g;
    m[i] = mi;
    v[i] = vi;
    w[i] = w[i] * decay - step_size * mi / (sqrtf(vi * inv_c2) + eps);
  }
}

}  // namespace

void embed_tokens(const int32_t* ids, const float* table, int64_t split, const float* extra, const float* positions,
                  float* x, int64_t tokens, int64_t length, int64_t width, void* s) {
  if (tokens * width == 0) return;
  embed_kernel<<<grid_stride_blocks(tokens * width), 256, 0, as_stream(s)>>>(ids, table, split, extra, positions, x,
                                                                             tokens, length, width);
  check_launch("embedding the tokens");
}

void embed_tokens_backward(const float* dx, const int32_t* order, const int32_t* starts, const int32_t* unique_ids,
                           int64_t unique, float* dtable, int64_t split, float* dextra, int64_t width, void* s) {
  if (unique == 0 || (dtable == nullptr && dextra == nullptr)) return;
  embed_backward_kernel<<<static_cast<unsigned>(unique), 128, 0, as_stream(s)>>>(dx, order, starts, unique_ids, dtable,
                                                                                 split, dextra, width);
  check_launch("the embedding's gradient");
}

void positions_backward(const float* dx, float* dpositions, int64_t batch, int64_t length, int64_t width, void* s) {
  positions_backward_kernel<<<grid_stride_blocks(length * width), 256, 0, as_stream(s)>>>(dx, dpositions, batch,
                                                                                          length, width);
  check_launch("the positions' gradient");
}

void gather_rows(const float* table, int64_t split, const float* extra, const int32_t* rows, float* out,
                 int64_t count, int64_t width, void* s) {
  if (count * width == 0) return;
  gather_rows_kernel<<<grid_stride_blocks(count * width), 256, 0, as_stream(s)>>>(table, split, extra, rows, out,
                                                                                  count, width);
  check_launch("gathering the output rows");
}

void scatter_add_rows(const float* d, const int32_t* rows, float* dtable, int64_t split, float* dextra,
                      int64_t count, int64_t width, void* s) {
  if (count * width == 0) return;
  scatter_add_rows_kernel<<<grid_stride_blocks(count * width), 256, 0, as_stream(s)>>>(d, rows, dtable, split,
                                                                                       dextra, count, width);
  check_launch("the output rows' gradient");
}

void dropout_apply(uint64_t seed, double p, float* x, int64_t n, void* s) {
  if (n == 0) return;
  // nn::dropout_mask's base: the seed mixed once
  uint64_t z = seed + 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  const uint64_t base = z ^ (z >> 31);
  dropout_kernel<<<grid_stride_blocks(n), 256, 0, as_stream(s)>>>(base, p, static_cast<float>(1.0 / (1.0 - p)), x, n);
  check_launch("dropout");
}

void layer_norm_forward(const float* x, const float* weight, const float* bias, float* y, void* y_product,
                        element type, float* mean, float* rstd, int64_t rows, int64_t width, void* s) {
  if (rows == 0) return;
  with_element_type(type, [&](auto zero) {
    using T = decltype(zero);
    layer_norm_kernel<T><<<row_blocks(rows), 256, 0, as_stream(s)>>>(x, weight, bias, y, static_cast<T*>(y_product),
                                                                     mean, rstd, rows, width);
  });
  check_launch("layer norm");
}

void layer_norm_backward_input(const float* dy, const float* x, const float* weight, const float* mean,
                               const float* rstd, float* dx, bool accumulate, int64_t rows, int64_t width, void* s) {
  if (rows == 0) return;
  layer_norm_backward_kernel<<<row_blocks(rows), 256, 0, as_stream(s)>>>(dy, x, weight, mean, rstd, dx, accumulate,
                                                                         rows, width);
  check_launch("layer norm's backward");
}

void layer_norm_backward_weights(const float* dy, const float* x, const float* mean, const float* rstd,
                                 float* dweight, float* dbias, float* workspace, int64_t rows, int64_t width,
                                 void* s) {
  column_pass<float>(dy, x, mean, rstd, dweight, dbias, workspace, rows, width, s);
  check_launch("layer norm's weight gradients");
}

void column_sums(const void* d, element type, float* dbias, float* workspace, int64_t rows, int64_t width, void* s) {
  with_element_type(type, [&](auto zero) {
    using T = decltype(zero);
    column_pass(static_cast<const T*>(d), nullptr, nullptr, nullptr, dbias, nullptr, workspace, rows, width, s);
  });
  check_launch("a bias's gradient");
}

int64_t column_workspace(int64_t width) { return 2 * max_chunks * width; }

void add_bias(float* y, const float* bias, const float* residual, int64_t rows, int64_t width, void* s) {
  if (rows * width == 0) return;
  add_bias_kernel<<<grid_stride_blocks(rows * width), 256, 0, as_stream(s)>>>(y, bias, residual, rows * width, width);
  check_launch("adding a bias");
}

void bias_relu(const void* pre, const float* bias, void* act, element type, int64_t rows, int64_t width, void* s) {
  if (rows * width == 0) return;
  with_element_type(type, [&](auto zero) {
    using T = decltype(zero);
    bias_relu_kernel<T><<<grid_stride_blocks(rows * width), 256, 0, as_stream(s)>>>(
        static_cast<const T*>(pre), bias, static_cast<T*>(act), rows * width, width);
  });
  check_launch("bias and ReLU");
}

void relu_backward(const void* dact, const void* act, void* dpre, element type, int64_t n, void* s) {
  if (n == 0) return;
  with_element_type(type, [&](auto zero) {
    using T = decltype(zero);
    relu_backward_kernel<T><<<grid_stride_blocks(n), 256, 0, as_stream(s)>>>(
        static_cast<const T*>(dact), static_cast<const T*>(act), static_cast<T*>(dpre), n);
  });
  check_launch("ReLU's backward");
}

void add_into(float* y, const float* x, int64_t n, void* s) {
  if (n == 0) return;
  add_into_kernel<<<grid_stride_blocks(n), 256, 0, as_stream(s)>>>(y, x, n);
  check_launch("a residual sum");
}

void rows_to_heads(const void* rows, bool rows_in_type, const float* bias, int64_t parts, void* const* heads,
                   element type, int64_t batch, int64_t length, int64_t heads_count, int64_t head_dim, void* s) {
  const int64_t n = batch * length * parts * heads_count * head_dim;
  if (n == 0) return;
  with_element_type(type, [&](auto zero) {
    using T = decltype(zero);
    T* q = static_cast<T*>(heads[0]);
    T* k = parts > 1 ? static_cast<T*>(heads[1]) : nullptr;
    T* v = parts > 2 ? static_cast<T*>(heads[2]) : nullptr;
    if (rows_in_type)
      rows_to_heads_kernel<T, T><<<grid_stride_blocks(n), 256, 0, as_stream(s)>>>(
          static_cast<const T*>(rows), bias, parts, q, k, v, batch, length, heads_count, head_dim);
    else
      rows_to_heads_kernel<float, T><<<grid_stride_blocks(n), 256, 0, as_stream(s)>>>(
          static_cast<const float*>(rows), bias, parts, q, k, v, batch, length, heads_count, head_dim);
  });
  check_launch("rows to heads");
}

void heads_to_rows(const void* const* heads, int64_t parts, void* rows, element type, int64_t batch, int64_t length,
                   int64_t heads_count, int64_t head_dim, void* s) {
  const int64_t n = batch * length * parts * heads_count * head_dim;
  if (n == 0) return;
  with_element_type(type, [&](auto zero) {
    using T = decltype(zero);
    heads_to_rows_kernel<T><<<grid_stride_blocks(n), 256, 0, as_stream(s)>>>(
        static_cast<const T*>(heads[0]), parts > 1 ? static_cast<const T*>(heads[1]) : nullptr,
        parts > 2 ? static_cast<const T*>(heads[2]) : nullptr, parts, static_cast<T*>(rows), batch, length,
        heads_count, head_dim);
  });
  check_launch("heads to rows");
}

void padding_mask(const int32_t* lengths, float* mask, int64_t batch, int64_t keys, void* s) {
  if (batch * keys == 0) return;
  padding_mask_kernel<<<grid_stride_blocks(batch * keys), 256, 0, as_stream(s)>>>(lengths, mask, batch, keys);
  check_launch("the padding mask");
}

void gather_token_rows(const float* y, const int32_t* index, float* out, int64_t rows, int64_t width, void* s) {
  if (rows * width == 0) return;
  gather_token_rows_kernel<<<grid_stride_blocks(rows * width), 256, 0, as_stream(s)>>>(y, index, out, rows, width);
  check_launch("token pooling");
}

void scatter_token_rows(const float* d, const int32_t* index, float* dy, int64_t rows, int64_t width, void* s) {
  if (rows * width == 0) return;
  scatter_token_rows_kernel<<<grid_stride_blocks(rows * width), 256, 0, as_stream(s)>>>(d, index, dy, rows, width);
  check_launch("token pooling's backward");
}

void softmax_cross_entropy(void* logits, element type, const float* bias, const int32_t* targets, float* row_loss,
                           float scale, int64_t rows, int64_t classes, void* s) {
  if (rows == 0) return;
  with_element_type(type, [&](auto zero) {
    using T = decltype(zero);
    softmax_cross_entropy_kernel<T><<<static_cast<unsigned>(rows), 256, 0, as_stream(s)>>>(
        static_cast<T*>(logits), bias, targets, row_loss, scale, classes);
  });
  check_launch("softmax cross-entropy");
}

void sum_rows_loss(const float* row_loss, int64_t rows, double* loss_sum, void* s) {
  sum_loss_kernel<<<1, 256, 0, as_stream(s)>>>(row_loss, rows, loss_sum);
  check_launch("the loss's sum");
}

void score_rows(const void* logits, element type, const float* bias, const int32_t* targets, float* row_loss,
                int32_t* row_rank, int64_t rows, int64_t classes, void* s) {
  if (rows == 0) return;
  with_element_type(type, [&](auto zero) {
    using T = decltype(zero);
    score_rows_kernel<T><<<static_cast<unsigned>(rows), 256, 0, as_stream(s)>>>(
        static_cast<const T*>(logits), bias, targets, row_loss, row_rank, classes);
  });
  check_launch("scoring the rows");
}

void clip_scale(const float* grads, int64_t n, double max_norm, double* workspace, float* scale, void* s) {
  squares_kernel<<<norm_blocks, 256, 0, as_stream(s)>>>(grads, n, workspace);
  clip_scale_kernel<<<1, 1, 0, as_stream(s)>>>(workspace, norm_blocks, max_norm, scale);
  check_launch("the gradients' norm");
}

void adamw_update(float* w, const float* grad, float* m, float* v, int64_t n, const float* scale, float decay,
                  float step_size, float inv_c2, float beta1, float beta2, float eps, void* s) {
  if (n == 0) return;
  adamw_kernel<<<grid_stride_blocks(n), 256, 0, as_stream(s)>>>(w, grad, m, v, n, scale, decay, step_size, inv_c2,
                                                                beta1, beta2, eps);
  check_launch("AdamW");
}

}  // namespace attn::cuda_kernels
