#include "ring_attention.hpp"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <limits>
#include <thread>
#include <vector>

#include "attn/error.hpp"
#include "attn/sdpa_backward.hpp"
#include "block_merge.hpp"
#include "ring_blocks.hpp"
#include "session.hpp"

namespace attn::dist {

namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int message_count(int64_t floats) {
  // MPI counts are int: a block past 2^31 floats (8 GiB) would need more ranks.
  if (floats > std::numeric_limits<int>::max())
    throw_usage("a K/V block of more than 2^31 floats per rank: use more ranks");
  return static_cast<int>(floats);
}

}  // namespace

tensor ring_sdpa(const tensor& q_local, const tensor& k_local, const tensor& v_local,
                 const zigzag& queries, const zigzag& keys, const sdpa_options& options,
                 ring_profile* profile) {
  const int K = ranks(), r = rank();
  const int64_t B = q_local.dim(0), H = q_local.dim(1), Hkv = k_local.dim(1);
  const int64_t D = k_local.dim(3), Dv = v_local.dim(3);
  const int64_t per_row = B * Hkv * (D + Dv);  // floats of K and V per key row
  const auto block_floats = [&](int origin) { return per_row * keys.local_rows(origin); };

  // Two buffers: the block in hand and the next one arriving. Each holds K then V, dense.
  const int64_t most = per_row * keys.max_local_rows();
  std::vector<float> current(static_cast<size_t>(most)), next(static_cast<size_t>(most));
  {
    const tensor kc = k_local.contiguous(), vc = v_local.contiguous();
    std::copy(kc.data(), kc.data() + kc.numel(), current.begin());
    std::copy(vc.data(), vc.data() + vc.numel(), current.begin() + kc.numel());
  }
  block_merge merged(B, H, queries.local_rows(r), Dv);
  sdpa_options block_options = options;
  const int left = (r - 1 + K) % K, right = (r + 1) % K;
  double compute_s = 0, wait_s = 0, merge_s = 0;
  for (int step = 0; step < K; ++step) {
    const int origin = (r - step + K) % K;
    MPI_Request requests[2];
    int pending = 0;
    if (step + 1 < K) {
      const int arriving = (origin - 1 + K) % K;
      MPI_Irecv(next.data(), message_count(block_floats(arriving)), MPI_FLOAT, left, step,
                MPI_COMM_WORLD, &requests[pending++]);
      MPI_Isend(current.data(), message_count(block_floats(origin)), MPI_FLOAT, right, step,
                MPI_COMM_WORLD, &requests[pending++]);
    }
    // OpenMPI moves a message only inside an MPI call, so a block posted and then waited for
    // after the kernel would move after it. A helper thread polls the transfer meanwhile,
    // sleeping between polls so that it takes next to no time from the kernel's threads.
    std::future<void> transfer;
    if (pending > 0 && serialized_threads)
      transfer = std::async(std::launch::async, [&requests, pending] {
        int done = 0;
        while (MPI_Testall(pending, requests, &done, MPI_STATUSES_IGNORE), !done)
          std::this_thread::sleep_for(std::chrono::microseconds(100));
      });
    const double t0 = now();
    const int64_t rows = keys.local_rows(origin);
    const tensor k = tensor::view(current.data(), {B, Hkv, rows, D});
    const tensor v = tensor::view(current.data() + B * Hkv * rows * D, {B, Hkv, rows, Dv});
    for (const block_call& c : calls_of_step(queries, keys, r, origin, options.causal)) {
      block_options.causal = c.causal;
      tensor lse;
      const tensor o = sdpa_forward(q_local.slice(2, c.q0, c.q1), k.slice(2, c.k0, c.k1),
                                    v.slice(2, c.k0, c.k1), block_options, lse);
      const double m0 = now();
      merged.add(o, lse, c.q0);
      merge_s += now() - m0;
    }
    const double t1 = now();
    if (transfer.valid())
      transfer.get();
    else
      MPI_Waitall(pending, requests, MPI_STATUSES_IGNORE);
    compute_s += t1 - t0;
    wait_s += now() - t1;
    std::swap(current, next);
  }
  if (profile != nullptr) {
    profile->compute_s = compute_s, profile->wait_s = wait_s, profile->merge_s = merge_s;
    profile->bytes_per_step = 4.0 * static_cast<double>(most);
  }
  return merged.output();
}

double ring_transfer_seconds(int64_t floats, int reps) {
  const int K = ranks(), r = rank();
  if (K == 1) return 0;
  std::vector<float> out(static_cast<size_t>(floats), 1.0f), in(static_cast<size_t>(floats));
  std::vector<double> times;
  for (int i = 0; i <= reps; ++i) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = now();
    MPI_Sendrecv(out.data(), message_count(floats), MPI_FLOAT, (r + 1) % K, 0, in.data(),
                 message_count(floats), MPI_FLOAT, (r - 1 + K) % K, 0, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    double t = now() - t0;
    MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (i > 0) times.push_back(t);  // the first exchange sets up the connection
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

}  // namespace attn::dist
