#include "nn/causal_decoder.hpp"

#include "attn/error.hpp"
#include "nn/embedding.hpp"
#include "nn/layer_norm.hpp"

namespace attn::nn {

causal_decoder::causal_decoder(const network<float>& net) : net_(net) {
  const network_shape& s = net.shape();
  if (!s.causal || !s.tied_output || !s.norm_first || s.layers < 1 || s.window > 0 || s.positions < 1)
    throw_usage("generation needs a language model (train one with --task lm)");
  output_table_ = net.output().table(net.trunk());
  kv_.resize(static_cast<size_t>(s.layers));
  for (self_attention_kv& kv : kv_) kv.reset(s.width, s.positions);
  const auto e = static_cast<size_t>(s.width);
  for (auto* v : {&x_, &normed_}) v->resize(e);
  mean_.resize(1);
  rstd_.resize(1);
}

const std::vector<float>& causal_decoder::step(int64_t id) {
  const network_shape& s = net_.shape();
  if (length_ >= s.positions)
    throw_usage("the decoder's cache is full: the model has no position past its context");
  const int64_t t = length_, e = s.width;
  // x = embedding[id] + position[t]
  embedding_forward(&id, net_.trunk().embedding.value.data(), s.vocabulary,
                    net_.trunk().new_words.value.data(), x_.data(), 1, s.embed);
  for (int64_t j = 0; j < e; ++j)
    x_[static_cast<size_t>(j)] += net_.trunk().position.value[static_cast<size_t>(t * e + j)];
  const encoder_block_shape block{{1, 1, e, e, s.heads}, s.feedforward, s.norm_first};
  for (size_t layer = 0; layer < net_.trunk().layers.size(); ++layer)
    encoder_block_row_forward(x_.data(), net_.trunk().layers[layer].weights(), kv_[layer], t, block,
                              block_);
  // logits = the tied output of LayerNorm_f(x), one row
  layer_norm_forward(x_.data(), net_.trunk().final_norm_weight.value.data(),
                     net_.trunk().final_norm_bias.value.data(), normed_.data(), mean_.data(),
                     rstd_.data(), int64_t{1}, e);
  net_.output().row_scores(normed_.data(), output_table_, hidden_, logits_, token_scores_);
  ++length_;
  return logits_;
}

}  // namespace attn::nn
