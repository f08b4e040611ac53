#include "row_exchange.hpp"

#include <mpi.h>

#include <algorithm>
#include <limits>

#include "attn/error.hpp"
#include "session.hpp"

namespace attn::dist {

namespace {

int count_of(int64_t floats) {
  if (floats > std::numeric_limits<int>::max())
    throw_usage("more than 2^31 floats for one rank: use more ranks");
  return static_cast<int>(floats);
}

// Copies rows [from, to) of every (b, h) of src [B, H, *, D] to rows starting at `at` of dst.
void copy_rows(const tensor& src, int64_t from, int64_t to, tensor& dst, int64_t at) {
  const tensor part = src.slice(2, from, to).contiguous();
  const int64_t BH = src.dim(0) * src.dim(1), D = src.dim(3), n = to - from;
  for (int64_t bh = 0; bh < BH; ++bh)
    std::copy(part.data() + bh * n * D, part.data() + (bh + 1) * n * D,
              dst.data() + (bh * dst.dim(2) + at) * D);
}

}  // namespace

shape_t broadcast_shape(const shape_t& shape) {
  int64_t dims[4] = {0, 0, 0, 0};
  std::copy(shape.begin(), shape.begin() + std::min<size_t>(shape.size(), 4), dims);
  MPI_Bcast(dims, 4, MPI_INT64_T, 0, MPI_COMM_WORLD);
  return {dims[0], dims[1], dims[2], dims[3]};
}

tensor local_rows(const tensor& full, const zigzag& layout, int r) {
  const int lo = layout.low(r), hi = layout.high(r);
  tensor out({full.dim(0), full.dim(1), layout.local_rows(r), full.dim(3)});
  copy_rows(full, layout.begin(lo), layout.begin(lo) + layout.size(lo), out, 0);
  copy_rows(full, layout.begin(hi), layout.begin(hi) + layout.size(hi), out, layout.size(lo));
  return out;
}

tensor scatter_rows(const tensor& full, const shape_t& shape, const zigzag& layout) {
  const int r = rank();
  if (r != 0) {
    tensor mine({shape[0], shape[1], layout.local_rows(r), shape[3]});
    MPI_Recv(mine.data(), count_of(mine.numel()), MPI_FLOAT, 0, 0, MPI_COMM_WORLD,
             MPI_STATUS_IGNORE);
    return mine;
  }
  // One rank's rows at a time, so rank 0 holds the input and one slice beside it.
  for (int dest = 1; dest < ranks(); ++dest) {
    const tensor part = local_rows(full, layout, dest);
    MPI_Send(part.data(), count_of(part.numel()), MPI_FLOAT, dest, 0, MPI_COMM_WORLD);
  }
  return local_rows(full, layout, 0);
}

tensor gather_rows(const tensor& local, const zigzag& layout) {
  const int r = rank();
  if (r != 0) {
    MPI_Send(local.data(), count_of(local.numel()), MPI_FLOAT, 0, 1, MPI_COMM_WORLD);
    return {};
  }
  const int64_t B = local.dim(0), H = local.dim(1), D = local.dim(3);
  tensor full({B, H, layout.length, D});
  for (int from = 0; from < ranks(); ++from) {
    tensor part = from == 0 ? local : tensor({B, H, layout.local_rows(from), D});
    if (from != 0)
      MPI_Recv(part.data(), count_of(part.numel()), MPI_FLOAT, from, 1, MPI_COMM_WORLD,
               MPI_STATUS_IGNORE);
    const int lo = layout.low(from), hi = layout.high(from);
    copy_rows(part, 0, layout.size(lo), full, layout.begin(lo));
    copy_rows(part, layout.size(lo), layout.local_rows(from), full, layout.begin(hi));
  }
  return full;
}

}  // namespace attn::dist
