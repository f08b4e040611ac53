// attn_attention_layer_npy DIR HEADS CAUSAL: the trainable attention layer (src/nn/attention_layer)
// run once, forward and backward, on .npy files, so that test_attention_layer_torch.py can hold
// it against PyTorch's nn.MultiheadAttention. Reads from DIR
//   x_q [B, L, Eq], x_kv [B, S, Ekv], dy [B, L, E], wq [E, Eq], wk, wv [E, Ekv], wo [E, E],
//   bq, bk, bv, bo [E], and key_lengths [B] (optional: whole numbers, keys per sequence)
// and writes there y [B, L, E], dx_q, dx_kv and dwq, dbq, dwk, dbk, dwv, dbv, dwo, dbo.
// A test tool, not part of attn: it reaches the layer below the public API.
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "attn/npy.hpp"
#include "npy_files.hpp"
#include "nn/attention_layer.hpp"

namespace {

struct array {
  std::vector<float> values;
  attn::shape_t shape;
};

array read(const std::filesystem::path& dir, const std::string& name) {
  const attn::tensor t = attn::oracle::read_npy_file(dir, name);
  return {std::vector<float>(t.values().begin(), t.values().end()), t.shape()};
}

void write(const std::filesystem::path& dir, const std::string& name, std::vector<float>& values,
           const attn::shape_t& shape) {
  attn::oracle::write_npy_file(dir, name, values, shape);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s DIR HEADS CAUSAL(0|1)\n", argv[0]);
    return 1;
  }
  try {
    const std::filesystem::path dir = argv[1];
    const array x_q = read(dir, "x_q"), x_kv = read(dir, "x_kv"), dy = read(dir, "dy");
    const array wq = read(dir, "wq"), bq = read(dir, "bq"), wk = read(dir, "wk"),
                bk = read(dir, "bk"), wv = read(dir, "wv"), bv = read(dir, "bv"),
                wo = read(dir, "wo"), bo = read(dir, "bo");
    const attn::nn::attention_shape s{.batch = x_q.shape[0],
                                      .queries = x_q.shape[1],
                                      .keys = x_kv.shape[1],
                                      .query_input = x_q.shape[2],
                                      .key_input = x_kv.shape[2],
                                      .width = wq.shape[0],
                                      .heads = std::stoll(argv[2])};
    attn::nn::attention_mask_spec mask{.causal = std::string(argv[3]) == "1", .lengths = {}};
    if (std::filesystem::exists(dir / "key_lengths.npy"))
      for (float n : read(dir, "key_lengths").values)
        mask.lengths.push_back(static_cast<int64_t>(n));

    const attn::nn::attention_weights<float> w{wq.values.data(), bq.values.data(), wk.values.data(),
                                               bk.values.data(), wv.values.data(), bv.values.data(),
                                               wo.values.data(), bo.values.data()};
    std::vector<float> y(dy.values.size());
    attn::nn::attention_cache<float> cache;
    attn::nn::attention_forward(x_q.values.data(), x_kv.values.data(), w, y.data(), cache, s, mask);
    // The backward adds into its gradients: they start at zero.
    std::vector<float> dx_q(x_q.values.size()), dx_kv(x_kv.values.size());
    std::vector<float> dwq(wq.values.size()), dbq(bq.values.size()), dwk(wk.values.size()),
        dbk(bk.values.size()), dwv(wv.values.size()), dbv(bv.values.size()), dwo(wo.values.size()),
        dbo(bo.values.size());
    attn::nn::attention_backward(dy.values.data(), x_q.values.data(), x_kv.values.data(), w, cache,
                                 dx_q.data(), dx_kv.data(),
                                 {dwq.data(), dbq.data(), dwk.data(), dbk.data(), dwv.data(),
                                  dbv.data(), dwo.data(), dbo.data()},
                                 s, mask);
    write(dir, "y", y, dy.shape);
    write(dir, "dx_q", dx_q, x_q.shape);
    write(dir, "dx_kv", dx_kv, x_kv.shape);
    write(dir, "dwq", dwq, wq.shape);
    write(dir, "dbq", dbq, bq.shape);
    write(dir, "dwk", dwk, wk.shape);
    write(dir, "dbk", dbk, bk.shape);
    write(dir, "dwv", dwv, wv.shape);
    write(dir, "dbv", dbv, bv.shape);
    write(dir, "dwo", dwo, wo.shape);
    write(dir, "dbo", dbo, bo.shape);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
  return 0;
}
