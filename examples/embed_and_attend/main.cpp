// Uses attn as a library: contextual embeddings of a sentence on the embedded default vectors,
// then scaled dot-product attention over the caller's own buffers (viewed, not copied), and,
// given a safetensors file of nn.MultiheadAttention weights, that layer too.
//   embed_and_attend [WEIGHTS.safetensors NUM_HEADS]
#include <attn/attn.hpp>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

int main(int argc, char** argv) try {
  // 1. Text → tokens → static vectors → self-attention → contextual embeddings.
  const attn::Vectors glove = attn::Vectors::load_default();
  const attn::embedding e = attn::embed("he sat by the river bank", glove);
  const attn::tensor& a = e.steps.weights;  // A [N, N]
  std::printf("embed: %zu tokens, C [%lld, %lld]\n", e.tokens.size(),
              static_cast<long long>(e.steps.context.dim(0)),
              static_cast<long long>(e.steps.context.dim(1)));
  const int64_t bank = static_cast<int64_t>(e.tokens.size()) - 1;
  std::printf("\"%s\" attends to:", e.tokens.back().c_str());
  for (int64_t j = 0; j <= bank; ++j)
    std::printf(" %s %.3f", e.tokens[static_cast<size_t>(j)].c_str(), a.at({bank, j}));
  std::printf("\n");

  // 2. sdpa on memory the program owns: q, k, v [B=1, H=2, L=3, D=4], causal.
  std::vector<float> qkv(1 * 2 * 3 * 4);
  for (size_t i = 0; i < qkv.size(); ++i) qkv[i] = static_cast<float>(i % 7) * 0.25f - 0.5f;
  const attn::tensor x = attn::tensor::view(qkv.data(), {1, 2, 3, 4});
  attn::tensor weights;
  const attn::tensor out = attn::sdpa(x, x, x, {.causal = true}, &weights);
  std::printf("sdpa: out %s, first query sees only itself: weight %.3f\n",
              attn::shape_to_string(out.shape()).c_str(), weights.at({0, 0, 0, 0}));

  // 3. A PyTorch nn.MultiheadAttention saved as safetensors (see the README).
  if (argc == 3) {
    const auto layer = attn::MultiheadAttention::load(argv[1], std::atoll(argv[2]));
    const attn::tensor query({1, 5, layer.embed_dim()}, 0.5f);
    const attn::tensor o = layer.forward(query, query, query);
    std::printf(
        "mha: embed_dim %lld, heads %lld, out %s\n", static_cast<long long>(layer.embed_dim()),
        static_cast<long long>(layer.num_heads()), attn::shape_to_string(o.shape()).c_str());
  }
  return 0;
} catch (const attn::Error& err) {
  std::fprintf(stderr, "error: %s\n", err.what());
  return err.kind() == attn::error_kind::usage ? 1 : 2;
}
