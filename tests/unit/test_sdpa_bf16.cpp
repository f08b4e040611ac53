// sdpa with bf16 operands, every bf16 path this CPU can run (vdpbf16ps, its float32 emulation on
// AVX-512 and on AVX2), against the float64 reference on the bf16-rounded inputs. The bound is
// FlashAttention's test rule: the error at most twice that of the same formula computed the way
// PyTorch's bf16 math path does (every product's result rounded to bf16). Also: vdpbf16ps and its
// AVX-512 emulation give the same bits, fully masked rows are exactly 0, no write outside the output, the same bits from
// run to run and across thread counts.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "attn/error.hpp"
#include "attn/sdpa.hpp"
#include "attn/sdpa_backward.hpp"
#include "core/half.hpp"
#include "sdpa_test_support.hpp"

namespace {

using namespace sdpa_test;  // NOLINT: the shared test helpers

float bf16(float x) { return attn::bf16_to_float(attn::float_to_bf16(x)); }

std::vector<isa> bf16_paths() {
  std::vector<isa> out;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    out.push_back({"avx2 (bf16 emulated)", attn::kernels::flash_forward_bf16_emulated_avx2});
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq"))
    out.push_back({"avx512 (bf16 emulated)", attn::kernels::flash_forward_bf16_emulated_avx512});
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16"))
    out.push_back({"avx512_bf16", attn::kernels::flash_forward_bf16_avx512});
  return out;
}

// PyTorch's math attention on bf16 tensors: S = bf16(Q·Kᵀ) (float accumulation), scaled and
// masked in bf16, softmax in float rounded to bf16, O = bf16(P·V).
std::vector<float> bf16_math(const call& c) {
  const int64_t B = c.q.dim(0), H = c.q.dim(1), L = c.q.dim(2), D = c.q.dim(3);
  const int64_t Hkv = c.k.dim(1), S = c.k.dim(2), Dv = c.v.dim(3);
  int64_t ms[4] = {0, 0, 0, 0};
  if (c.mask != nullptr)
    for (int i = 1; i <= c.mask->rank(); ++i)
      if (c.mask->dim(-i) != 1) ms[4 - i] = c.mask->strides()[c.mask->rank() - i];
  std::vector<float> out(static_cast<size_t>(B * H * L * Dv), 0.0f), s(static_cast<size_t>(S));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < L; ++i) {
        const int64_t hk = h / (H / Hkv);
        float mx = -inf;
        for (int64_t j = 0; j < S; ++j) {
          float dot = 0.0f;
          for (int64_t d = 0; d < D; ++d) dot += bf16(c.q.at({b, h, i, d})) * bf16(c.k.at({b, hk, j, d}));
          s[j] = bf16(bf16(dot) * bf16(c.scale));
          if (c.mask != nullptr) s[j] = bf16(s[j] + c.mask->data()[b * ms[0] + h * ms[1] + i * ms[2] + j * ms[3]]);
          if (c.causal && j > i) s[j] = -inf;
          mx = std::max(mx, s[j]);
        }
        if (mx == -inf) continue;
        float sum = 0.0f;
        for (int64_t j = 0; j < S; ++j) sum += (s[j] = std::exp(s[j] - mx));
        for (int64_t j = 0; j < S; ++j) s[j] = bf16(s[j] / sum);
        for (int64_t d = 0; d < Dv; ++d) {
          float acc = 0.0f;
          for (int64_t j = 0; j < S; ++j) acc += s[j] * bf16(c.v.at({b, hk, j, d}));
          out[((b * H + h) * L + i) * Dv + d] = bf16(acc);
        }
      }
  return out;
}

void check_case(const sweep_case& sc, std::mt19937& rng, const std::vector<isa>& paths) {
  SCOPED_TRACE(describe(sc));
  call c;
  const float spread = 2.0f / std::sqrt(std::sqrt(static_cast<float>(std::max<int64_t>(sc.D, 1))));
  c.q = random_tensor({sc.B, sc.H, sc.L, sc.D}, rng, -spread, spread);
  c.k = random_tensor({sc.B, sc.Hkv, sc.S, sc.D}, rng, -spread, spread);
  c.v = random_tensor({sc.B, sc.Hkv, sc.S, sc.Dv}, rng);
  c.causal = sc.causal;
  c.scale = 0.125f;  // a power of two: exact in bf16, so the math path's scaling adds no error
  const tensor mask = make_mask(sc.mask, sc, rng);
  if (sc.mask != mask_kind::none) c.mask = &mask;

  attn::sdpa_options options;
  options.causal = c.causal;
  options.attn_mask = c.mask;
  options.scale = attn::scale_spec::parse("0.125");
  options.dtype = attn::sdpa_dtype::bf16;
  const tensor want = attn::ref::sdpa(c.q, c.k, c.v, options);  // exact on the rounded inputs
  const double math_err = max_abs_error(bf16_math(c), want);
  // (Where the bf16 math path is exact, e.g. one key, ours must be within float32 rounding.)
  const double bound = std::max(2.0 * math_err, 1e-6 * std::max(1.0, max_abs(want)));
  std::vector<float> avx512;  // the first AVX-512 path's output
  for (const isa& path : paths) {
    SCOPED_TRACE(path.name);
    const fused_result got = run_fused(path, c, false);
    EXPECT_TRUE(got.guards_ok) << "a write outside the output";
    EXPECT_LE(max_abs_error(got.out, want), bound) << "bf16 math error " << math_err;
    if (path.name.rfind("avx512", 0) != 0) continue;
    // The emulation gives the instruction's bits. (AVX2 is held to the bound only: its exp2
    // differs from AVX-512's in the last place now and then, in float32 as in bf16.)
    if (avx512.empty()) avx512 = got.out;
    else EXPECT_EQ(std::memcmp(avx512.data(), got.out.data(), avx512.size() * sizeof(float)), 0)
        << "not the bits of the emulation";
  }
}

TEST(sdpa_bf16, random_sweep_against_reference) {
  const std::vector<isa> paths = bf16_paths();
  if (paths.empty()) GTEST_SKIP() << "no AVX2: bf16 runs on the reference";
  const std::vector<int64_t> lengths = {1, 2, 7, 63, 64, 65, 129, 300};
  const std::vector<int64_t> dims = {1, 7, 16, 33, 64, 65, 128};
  std::mt19937 rng(2027);
  for (int t = 0; t < 40; ++t) {
    const sweep_case sc = random_case(t, rng, lengths, dims);
    check_case(sc, rng, paths);
  }
}

TEST(sdpa_bf16, every_length_and_head_size_once) {
  const std::vector<isa> paths = bf16_paths();
  if (paths.empty()) GTEST_SKIP() << "no AVX2: bf16 runs on the reference";
  std::mt19937 rng(17);
  for (int64_t n : {1, 2, 3, 7, 63, 64, 65, 127, 129, 257})
    check_case({1, 2, 1, n, n + 2, 16, 16, n % 2 == 1, mask_kind::none}, rng, paths);
  for (int64_t d : {1, 2, 7, 31, 32, 33, 64, 65, 128, 129})
    check_case({1, 2, 2, 37, 70, d, d, true, mask_kind::bool_per_key}, rng, paths);
}

TEST(sdpa_bf16, fully_masked_rows_are_exactly_zero) {
  std::mt19937 rng(19);
  const tensor q = random_tensor({1, 2, 70, 16}, rng), k = random_tensor({1, 2, 300, 16}, rng);
  const tensor v = random_tensor({1, 2, 300, 16}, rng);
  tensor mask({70, 300}, 0.0f);
  for (int64_t j = 0; j < 300; ++j) mask.at({5, j}) = -inf;
  attn::sdpa_options o;
  o.attn_mask = &mask;
  o.dtype = attn::sdpa_dtype::bf16;
  const tensor out = attn::sdpa(q, k, v, o);
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t d = 0; d < 16; ++d) EXPECT_EQ(out.at({0, h, 5, d}), 0.0f);
  EXPECT_NE(out.at({0, 0, 6, 0}), 0.0f);
}

TEST(sdpa_bf16, same_bits_every_run_and_every_thread_count) {
  std::mt19937 rng(21);
  const tensor q = random_tensor({2, 4, 300, 64}, rng), k = random_tensor({2, 2, 333, 64}, rng);
  const tensor v = random_tensor({2, 2, 333, 64}, rng);
  attn::sdpa_options o;
  o.causal = true;
  o.dtype = attn::sdpa_dtype::bf16;
  const int threads = omp_get_max_threads();
  const tensor first = attn::sdpa(q, k, v, o);
  const tensor again = attn::sdpa(q, k, v, o);
  omp_set_num_threads(1);
  const tensor one = attn::sdpa(q, k, v, o);
  omp_set_num_threads(3);
  const tensor three = attn::sdpa(q, k, v, o);
  omp_set_num_threads(threads);
  const size_t bytes = first.values().size() * sizeof(float);
  EXPECT_EQ(std::memcmp(first.data(), again.data(), bytes), 0);
  EXPECT_EQ(std::memcmp(first.data(), one.data(), bytes), 0);
  EXPECT_EQ(std::memcmp(first.data(), three.data(), bytes), 0);
  // And not the float32 result: the dtype reached the kernel.
  o.dtype = attn::sdpa_dtype::float32;
  EXPECT_NE(std::memcmp(first.data(), attn::sdpa(q, k, v, o).data(), bytes), 0);
}

TEST(sdpa_bf16, rounding_matches_the_instruction_rule) {
  EXPECT_EQ(attn::float_to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(attn::float_to_bf16(std::bit_cast<float>(0x3F808000u)), 0x3F80);  // tie → even
  EXPECT_EQ(attn::float_to_bf16(std::bit_cast<float>(0x3F818000u)), 0x3F82);  // tie → even (up)
  EXPECT_EQ(attn::float_to_bf16(std::bit_cast<float>(0x3F808001u)), 0x3F81);  // above the tie
  EXPECT_EQ(attn::float_to_bf16(std::bit_cast<float>(0x00400000u)), 0x0000);  // subnormal → 0
  EXPECT_EQ(attn::float_to_bf16(std::bit_cast<float>(0x80400000u)), 0x8000);  // sign kept
  EXPECT_EQ(attn::float_to_bf16(std::bit_cast<float>(0x7F7FFFFFu)), 0x7F80);  // rounds to inf
  EXPECT_TRUE(std::isnan(attn::bf16_to_float(attn::float_to_bf16(std::nanf("")))));
}

}  // namespace
