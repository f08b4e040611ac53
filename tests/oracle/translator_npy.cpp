// attn_translator_npy DIR VOCAB WIDTH HEADS ENCODER_LAYERS DECODER_LAYERS FEEDFORWARD SMOOTHING: the
// translator (src/models/translator) run once, forward and backward, on .npy files, so that
// test_translator_torch.py can hold it against PyTorch's nn.Transformer(norm_first=True). Reads
// from DIR every parameter as NAME.npy (the model's names) and the batch: source [B, S],
// source_lengths [B], target_in [B, L], target_out [B, L] (ids as floats, −1 past a sentence);
// writes loss.npy [1] and grad.NAME.npy for every parameter. A test tool, not part of attn.
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "attn/npy.hpp"
#include "npy_files.hpp"
#include "models/translator.hpp"

namespace {

using attn::oracle::read_npy_file;
using attn::oracle::write_npy_file;

std::vector<int64_t> ids(const attn::tensor& t) {
  std::vector<int64_t> out;
  for (float v : t.values()) out.push_back(static_cast<int64_t>(v));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 9) {
    std::fprintf(stderr, "usage: %s DIR VOCAB WIDTH HEADS ENCODER_LAYERS DECODER_LAYERS FEEDFORWARD SMOOTHING\n", argv[0]);
    return 1;
  }
  try {
    const std::filesystem::path dir = argv[1];
    const attn::models::translator_shape shape{.vocabulary = std::stoll(argv[2]), .width = std::stoll(argv[3]),
                                               .heads = std::stoll(argv[4]), .encoder_layers = std::stoll(argv[5]),
                                               .decoder_layers = std::stoll(argv[6]),
                                               .feedforward = std::stoll(argv[7]), .dropout = 0.0,
                                               .label_smoothing = std::stod(argv[8])};
    attn::models::translator<float> model(shape);
    std::vector<attn::nn::parameter<float>*> all;
    model.append_parameters(all);
    for (attn::nn::parameter<float>* p : all) {
      const attn::tensor t = read_npy_file(dir, p->name);
      p->value.assign(t.values().begin(), t.values().end());
      if (p->value.size() != p->grad.size()) throw std::runtime_error(p->name + ": wrong size");
    }
    attn::models::translation_batch b;
    const attn::tensor source = read_npy_file(dir, "source"), target = read_npy_file(dir, "target_in");
    b.size = source.shape()[0];
    b.source_length = source.shape()[1];
    b.target_length = target.shape()[1];
    b.source = ids(source);
    b.source_lengths = ids(read_npy_file(dir, "source_lengths"));
    b.target_in = ids(target);
    b.target_out = ids(read_npy_file(dir, "target_out"));
    attn::models::translator_cache<float> cache;
    std::vector<float> loss{model.forward(b, cache, 0)};
    model.backward(b, cache);
    write_npy_file(dir, "loss", loss, {1});
    for (attn::nn::parameter<float>* p : all) write_npy_file(dir, "grad." + p->name, p->grad, p->shape);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
  return 0;
}
