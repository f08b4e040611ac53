#include "models/causal_lm.hpp"

#include "attn/error.hpp"
#include "nn/embedding.hpp"
#include "nn/layer_norm.hpp"

namespace attn::models {

causal_lm_decoder::causal_lm_decoder(const causal_lm<float>& model) : model_(model) {
  const nn::network_shape& s = model.shape();
  if (!s.norm_first || s.layers < 1 || s.window > 0 || s.positions < 1)
    throw_usage("generation needs a language model (train one with --task lm)");
  output_table_ = std::make_shared<const std::vector<float>>(model.output.table(model.trunk));
  kv_.resize(static_cast<size_t>(s.layers));
  for (nn::self_attention_kv& kv : kv_) kv.reset(s.width, s.positions);
  const auto e = static_cast<size_t>(s.width);
  for (auto* v : {&x_, &normed_}) v->resize(e);
  mean_.resize(1);
  rstd_.resize(1);
}

const std::vector<float>& causal_lm_decoder::step(int64_t id) {
  const nn::network_shape& s = model_.shape();
  if (length_ >= s.positions)
    throw_usage("the decoder's cache is full: the model has no position past its context");
  const int64_t t = length_, e = s.width;
  const trunk<float>& trunk = model_.trunk;
  // x = embedding[id] + position[t]
  nn::embedding_forward(&id, trunk.embedding.value.data(), s.vocabulary, trunk.new_words.value.data(),
                        x_.data(), 1, s.embed);
  for (int64_t j = 0; j < e; ++j)
    x_[static_cast<size_t>(j)] += trunk.position.value[static_cast<size_t>(t * e + j)];
  const nn::encoder_block_shape block{{1, 1, e, e, s.heads}, s.feedforward, s.norm_first};
  for (size_t layer = 0; layer < trunk.layers.size(); ++layer)
    nn::encoder_block_row_forward(x_.data(), trunk.layers[layer].weights(), kv_[layer], t, block, block_);
  // logits = the tied output of LayerNorm_f(x), one row
  nn::layer_norm_forward(x_.data(), trunk.final_norm_weight.value.data(), trunk.final_norm_bias.value.data(),
                         normed_.data(), mean_.data(), rstd_.data(), int64_t{1}, e);
  model_.output.row_scores(normed_.data(), *output_table_, hidden_, logits_, token_scores_);
  ++length_;
  return logits_;
}

}  // namespace attn::models
