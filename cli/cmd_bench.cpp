// attn bench: times sdpa on self-attention shapes B,N,H,D with the FLOP convention of the peers
// in ../shared/peers (4·B·H·N²·D, halved when causal: useful work only), so the figures line up.
// With --mha it times the whole layer instead (projections, sdpa, output projection).
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "attn/cpu.hpp"
#include "attn/cuda.hpp"
#include "attn/error.hpp"
#include "attn/multihead_attention.hpp"
#include "attn/sdpa.hpp"
#include "attn/sdpa_backward.hpp"
#include "attn/train.hpp"
#include "bench_inputs.hpp"
#include "cli_common.hpp"

namespace attn::cli {

namespace {

struct bench_args {
  std::vector<std::string> shapes;
  bool causal = false, backward = false, json = false, peak = false, mha = false;
  int threads = 0, reps = 7;
  std::string kernel = "fused", dtype = "float32", device = "cpu";
};

double median(std::vector<double> xs) {
  std::sort(xs.begin(), xs.end());
  return xs[xs.size() / 2];
}

// The median of args.reps timed calls of f, after one untimed call (page faults, thread start).
template <class F>
double median_seconds(const bench_args& args, F&& f) {
  const auto once = [&] {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  once();
  std::vector<double> times;
  for (int r = 0; r < args.reps; ++r) times.push_back(once());
  return median(times);
}

// 4·B·H·N²·D, halved when causal (only the lower triangle is useful work).
double attention_flops(const bench_args& args, const bench_shape& s) {
  return 4.0 * static_cast<double>(s.B * s.H) * static_cast<double>(s.N) *
         static_cast<double>(s.N) * static_cast<double>(s.D) * (args.causal ? 0.5 : 1.0);
}

void report(const bench_args& args, const bench_shape& s, int threads, double med, double flops) {
  const bool bf16 = parse_sdpa_dtype(args.dtype) == sdpa_dtype::bf16;
  const std::string isa = args.kernel == "reference" ? "reference" : bf16 ? bf16_kernel_path() : fused_kernel_isa();
  if (args.json) {
    nlohmann::ordered_json j;
    j["peer"] = "attn";
    j["B"] = s.B, j["N"] = s.N, j["H"] = s.H, j["D"] = s.D;
    j["causal"] = args.causal, j["backward"] = args.backward, j["threads"] = threads;
    j["median_s"] = med, j["gflops"] = flops / med / 1e9;
    j["kernel"] = args.kernel, j["isa"] = isa, j["dtype"] = sdpa_dtype_name(parse_sdpa_dtype(args.dtype));
    if (args.mha) j["mha"] = true;
    fmt::print("{}\n", j.dump());
  } else {
    fmt::print("{}{},{},{},{}{}{}  median {:.3f} ms over {} runs  {:.1f} GFLOP/s  ({} {}, {} threads)\n",
               args.mha ? "mha " : "", s.B, s.N, s.H, s.D, args.causal ? " causal" : "",
               bf16 ? " bf16" : "", med * 1e3, args.reps, flops / med / 1e9, args.kernel, isa, threads);
  }
}

void bench_one(const bench_args& args, const bench_shape& s, int threads) {
  std::mt19937 rng(42);
  // Q, K, V stored [B, N, H, D] (the layout of a fused projection, and of the ONNX Runtime
  // peer's input), viewed as [B, H, N, D]: the float32 kernel copies V into adjacent rows once
  // per call (src/kernels/flash_forward_dense.hpp), so that copy's time is in the figures.
  const tensor q = random_tensor({s.B, s.N, s.H, s.D}, rng).transpose(1, 2);
  const tensor k = random_tensor({s.B, s.N, s.H, s.D}, rng).transpose(1, 2);
  const tensor v = random_tensor({s.B, s.N, s.H, s.D}, rng).transpose(1, 2);
  sdpa_options options;
  options.causal = args.causal;
  options.kernel = args.kernel == "reference" ? sdpa_kernel::reference : sdpa_kernel::fused;
  options.dtype = parse_sdpa_dtype(args.dtype);
  if (!args.backward) {
    const double med = median_seconds(args, [&] { const tensor out = sdpa(q, k, v, options); });
    report(args, s, threads, med, attention_flops(args, s));
    return;
  }
  // A training step's attention: the forward saving lse, then the backward for a random
  // gradient of the output. FLOPs ×3.5: the backward's five products against the forward's two.
  // With the heap kept as attn train keeps it: the step's fresh gradients would otherwise be
  // mapped and zeroed by the kernel each time (at 4,128,12,64 a third of the time).
  keep_freed_memory_for_reuse();
  const tensor grad_o = random_tensor({s.B, s.H, s.N, s.D}, rng);
  const double med = median_seconds(args, [&] {
    tensor lse;
    const tensor out = sdpa_forward(q, k, v, options, lse);
    const sdpa_gradients g = sdpa_backward(q, k, v, out, lse, grad_o, options);
  });
  report(args, s, threads, med, 3.5 * attention_flops(args, s));
}

// The whole layer as self-attention on x [B, N, E = H·D]: Q, K, V and output projections
// (2·B·N·E² FLOPs each) around the attention. (The reference kernel does not apply here.)
void bench_mha_one(const bench_args& args, const bench_shape& s, int threads) {
  std::mt19937 rng(42);
  const int64_t E = s.H * s.D;
  const float w = 1.0f / std::sqrt(static_cast<float>(E));  // PyTorch-like initial scale
  std::map<std::string, tensor> state;
  state["in_proj_weight"] = random_tensor({3 * E, E}, rng, w);
  state["in_proj_bias"] = random_tensor({3 * E}, rng, w);
  state["out_proj.weight"] = random_tensor({E, E}, rng, w);
  state["out_proj.bias"] = random_tensor({E}, rng, w);
  const multihead_attention layer = multihead_attention::from_state_dict(state, s.H, "bench");
  const tensor x = random_tensor({s.B, s.N, E}, rng);
  mha_options options;
  options.causal = args.causal;
  options.dtype = parse_sdpa_dtype(args.dtype);
  const double med = median_seconds(args, [&] { const tensor out = layer.forward(x, x, x, options); });
  const double projections = 4.0 * 2.0 * static_cast<double>(s.B * s.N) * static_cast<double>(E * E);
  report(args, s, threads, med, projections + attention_flops(args, s));
}

// --device cuda: the CUDA kernels on device-resident random inputs, timed by CUDA events.
void bench_cuda_one(const bench_args& args, const bench_shape& s) {
  const cuda::precision p = cuda::parse_precision(args.dtype);
  const cuda::timing t = cuda::time_sdpa(s.B, s.H, s.N, s.D, args.causal, p, args.reps, args.backward);
  const double med = args.backward ? t.forward_backward_s : t.forward_s;
  const double flops = (args.backward ? 3.5 : 1.0) * attention_flops(args, s);
  const std::string path = cuda::forward_path(p, s.D, s.D);
  if (args.json) {
    nlohmann::ordered_json j;
    j["peer"] = "attn";
    j["B"] = s.B, j["N"] = s.N, j["H"] = s.H, j["D"] = s.D;
    j["causal"] = args.causal, j["backward"] = args.backward;
    j["median_s"] = med, j["tflops"] = flops / med / 1e12;
    j["device"] = "cuda", j["gpu"] = cuda::device_name(), j["dtype"] = cuda::precision_name(p);
    j["forward_path"] = path;
    fmt::print("{}\n", j.dump());
  } else {
    fmt::print("{},{},{},{}{} {}{}  median {:.3f} ms over {} runs  {:.1f} TFLOP/s  (cuda: {}; {})\n", s.B, s.N, s.H,
               s.D, args.causal ? " causal" : "", cuda::precision_name(p), args.backward ? " fwd+bwd" : "", med * 1e3,
               args.reps, flops / med / 1e12, path, cuda::device_name());
  }
}

void run(const bench_args& args) {
  if (args.device != "cpu" && args.device != "cuda")
    throw_usage(fmt::format("--device '{}': expected cpu or cuda", args.device));
  if (args.kernel != "fused" && args.kernel != "reference")
    throw_usage(fmt::format("--kernel '{}': expected fused or reference", args.kernel));
  if (args.reps < 1) throw_usage(fmt::format("--reps {}: expected at least 1", args.reps));
  std::vector<bench_shape> shapes;
  for (const std::string& text : args.shapes) shapes.push_back(parse_shape(text));
  if (args.device == "cuda") {
    if (args.mha || args.peak || args.kernel != "fused")
      throw_usage("--device cuda times the fused sdpa only (no --mha, --peak or --kernel reference)");
    if (shapes.empty()) throw_usage("give at least one shape B,N,H,D");
    for (const bench_shape& s : shapes) bench_cuda_one(args, s);
    return;
  }
  if (args.mha && args.backward) throw_usage("--mha times the forward only");
  if (args.mha && args.kernel != "fused") throw_usage("--mha runs the fused kernel only");
  if (args.threads < 0) throw_usage(fmt::format("--threads {}: expected at least 1", args.threads));
  if (shapes.empty() && !args.peak) throw_usage("give at least one shape B,N,H,D (or --peak)");
  if (args.threads > 0) omp_set_num_threads(args.threads);
  const int threads = omp_get_max_threads();

  if (args.peak) {
    const bool bf16 = parse_sdpa_dtype(args.dtype) == sdpa_dtype::bf16;
    const double peak = bf16 ? measure_bf16_peak_gflops(threads) : measure_fma_peak_gflops(threads);
    if (args.json) {
      nlohmann::ordered_json j;
      j["peak_gflops"] = peak, j["dtype"] = sdpa_dtype_name(parse_sdpa_dtype(args.dtype));
      j["threads"] = threads, j["cpu"] = cpu_model();
      fmt::print("{}\n", j.dump());
    } else {
      fmt::print("{} peak {:.1f} GFLOP/s ({} threads, {})\n", bf16 ? "bf16 dot-product (vdpbf16ps)" : "FMA",
                 peak, threads, cpu_model());
    }
  }
  for (const bench_shape& s : shapes) {
    if (args.mha) bench_mha_one(args, s, threads);
    else bench_one(args, s, threads);
  }
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto args = std::make_shared<bench_args>();
  CLI::App* sub = app.add_subcommand(
      "bench", "Time sdpa on self-attention shapes B,N,H,D (median of --reps runs, after a warm-up)");
  sub->add_option("shapes", args->shapes, "Shapes B,N,H,D (batch, sequence length, heads, head size)");
  sub->add_flag("--causal", args->causal, "Causal mask (FLOPs halved: useful work only)");
  sub->add_flag("--backward", args->backward, "Forward + backward (FLOPs × 3.5)");
  sub->add_option("--threads", args->threads, "Threads (default: all)");
  sub->add_option("--reps", args->reps, "Timed runs per shape (default 7)");
  sub->add_option("--kernel", args->kernel, "fused (default) or reference");
  sub->add_option("--dtype", args->dtype,
                  "float32 (default) or bf16 (Q·Kᵀ and P·V on bf16 operands, float32 accumulation)");
  sub->add_option("--device", args->device,
                  "cpu (default) or cuda: the CUDA kernels (a build with -DATTN_CUDA=ON; --dtype float32, bf16 or float16)");
  sub->add_flag("--json", args->json, "One JSON line per shape, as the peers print");
  sub->add_flag("--peak", args->peak,
                "First measure the machine's peak: float32 FMA, or with --dtype bf16 the vdpbf16ps rate");
  sub->add_flag("--mha", args->mha,
                "Time the whole multi-head attention layer (E = H·D): projections + sdpa; FLOPs "
                "add 8·B·N·E² for the four projections");
  sub->callback([args] { run(*args); });
}

}  // namespace attn::cli
