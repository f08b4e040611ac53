// attn-mpi bench: times ring attention on self-attention shapes B,N,H,D split over the ranks,
// with attn bench's FLOP convention (4·B·H·N²·D, halved when causal) and JSON fields, plus
// "ranks" and where a ring step's time goes: the kernel, the wait for the next block, and the
// transfer of one block measured alone.
#include <fmt/format.h>
#include <mpi.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "attn/error.hpp"
#include "attn/sdpa.hpp"
#include "bench_inputs.hpp"
#include "distributed/ring_attention.hpp"
#include "distributed/session.hpp"
#include "mpi_commands.hpp"

namespace attn::cli {

namespace {

struct ring_bench_args {
  std::vector<std::string> shapes;
  bool causal = false, json = false;
  int reps = 7;
};

double median(std::vector<double> xs) {
  std::sort(xs.begin(), xs.end());
  return xs[xs.size() / 2];
}

// The slowest rank's figure: the ring is as fast as its slowest member.
double slowest(double seconds) {
  MPI_Allreduce(MPI_IN_PLACE, &seconds, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return seconds;
}

void bench_one(const ring_bench_args& args, const bench_shape& s) {
  const int K = dist::ranks();
  const dist::zigzag layout{s.N, K};
  if (s.N < 2 * K)
    throw_usage(fmt::format("shape {},{},{},{}: {} ranks need N of at least {} (two chunks each)",
                            s.B, s.N, s.H, s.D, K, 2 * K));
  // Each rank makes its own rows: the benchmark times the ring, not the scatter.
  std::mt19937 rng(42u + static_cast<unsigned>(dist::rank()));
  const shape_t local = {s.B, s.H, layout.local_rows(dist::rank()), s.D};
  const tensor q = random_tensor(local, rng), k = random_tensor(local, rng),
               v = random_tensor(local, rng);
  sdpa_options options;
  options.causal = args.causal;
  std::vector<double> times, compute, wait, merge;
  dist::ring_profile profile;
  for (int rep = 0; rep <= args.reps; ++rep) {  // the first run is the untimed warm-up
    MPI_Barrier(MPI_COMM_WORLD);
    const auto t0 = std::chrono::steady_clock::now();
    const tensor out = dist::ring_sdpa(q, k, v, layout, layout, options, &profile);
    const double t =
        slowest(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    const double c = slowest(profile.compute_s), w = slowest(profile.wait_s),
                 m = slowest(profile.merge_s);
    if (rep == 0) continue;
    times.push_back(t), compute.push_back(c / K), wait.push_back(w / K), merge.push_back(m / K);
  }
  const double transfer =
      dist::ring_transfer_seconds(static_cast<int64_t>(profile.bytes_per_step / 4), args.reps);
  if (dist::rank() != 0) return;
  const double med = median(times);
  const double flops = 4.0 * static_cast<double>(s.B * s.H) * static_cast<double>(s.N) *
                       static_cast<double>(s.N) * static_cast<double>(s.D) *
                       (args.causal ? 0.5 : 1.0);
  const int threads = omp_get_max_threads();
  if (args.json) {
    nlohmann::ordered_json j;
    j["peer"] = "attn-mpi";
    j["B"] = s.B, j["N"] = s.N, j["H"] = s.H, j["D"] = s.D;
    j["causal"] = args.causal, j["backward"] = false, j["threads"] = threads;
    j["median_s"] = med, j["gflops"] = flops / med / 1e9;
    j["kernel"] = "fused", j["isa"] = fused_kernel_isa(), j["dtype"] = "float32";
    j["ranks"] = K;
    j["step_compute_s"] = median(compute), j["step_merge_s"] = median(merge);
    j["step_wait_s"] = median(wait);
    j["step_transfer_s"] = transfer, j["step_bytes"] = profile.bytes_per_step;
    fmt::print("{}\n", j.dump());
  } else {
    fmt::print(
        "{},{},{},{}{}  median {:.3f} ms over {} runs  {:.1f} GFLOP/s  (ring of {} ranks, {} "
        "threads each, fused {})\n  per ring step: compute {:.3f} ms (merge {:.3f} ms), wait "
        "{:.3f} ms; one block ({:.2f} MB) alone {:.3f} ms\n",
        s.B, s.N, s.H, s.D, args.causal ? " causal" : "", med * 1e3, args.reps, flops / med / 1e9,
        K, threads, fused_kernel_isa(), median(compute) * 1e3, median(merge) * 1e3,
        median(wait) * 1e3, profile.bytes_per_step / 1e6, transfer * 1e3);
  }
}

void run(const ring_bench_args& args) {
  if (args.reps < 1) throw_usage(fmt::format("--reps {}: expected at least 1", args.reps));
  std::vector<bench_shape> shapes;
  for (const std::string& text : args.shapes) shapes.push_back(parse_shape(text));
  if (shapes.empty()) throw_usage("give at least one shape B,N,H,D");
  for (const bench_shape& s : shapes) bench_one(args, s);
}

}  // namespace

void add_ring_bench_command(CLI::App& app) {
  auto args = std::make_shared<ring_bench_args>();
  CLI::App* sub = app.add_subcommand(
      "bench", "Time ring attention over the ranks on shapes B,N,H,D (median of --reps runs)");
  sub->add_option("shapes", args->shapes,
                  "Shapes B,N,H,D (batch, sequence length, heads, head size)");
  sub->add_flag("--causal", args->causal, "Causal mask (FLOPs halved: useful work only)");
  sub->add_option("--reps", args->reps, "Timed runs per shape (default 7)");
  sub->add_flag("--json", args->json, "One JSON line per shape, as attn bench prints");
  sub->callback([args] { run(*args); });
}

}  // namespace attn::cli
