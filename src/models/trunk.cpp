// The trunk's forward and backward, layer by layer (see trunk.hpp).
#include "models/trunk.hpp"

#include "nn/dropout.hpp"
#include "nn/embedding.hpp"
#include "nn/layer_norm.hpp"

namespace attn::models {

using nn::make_parameter;

template <class T>
trunk<T>::trunk(const nn::network_shape& s) : shape_(s) {
  const int64_t e = s.width, in = s.embed;
  embedding = make_parameter<T>("embedding.weight", {s.vocabulary, in}, false);
  embedding.trainable = s.train_embeddings;
  if (!embedding.trainable) embedding.grad.clear();  // frozen: 50,000 GloVe rows need no gradient
  new_words = make_parameter<T>("embedding.new_words", {s.new_words, in}, false);
  embedding.row_width = new_words.row_width = in;
  position = make_parameter<T>("position.weight", {s.positions, in}, false);
  window_weight = make_parameter<T>("window.weight", {s.window > 0 ? in : 0, s.window * in}, true);
  window_bias = make_parameter<T>("window.bias", {s.window > 0 ? in : 0}, false);
  if (s.layers == 0) attention = nn::make_attention_parameters<T>("attention.", e, in);
  for (int64_t i = 0; i < s.layers; ++i)
    layers.push_back(nn::make_encoder_parameters<T>(i, e, s.feedforward));
  const int64_t final_norm = s.norm_first && s.layers > 0 ? e : 0;
  final_norm_weight = make_parameter<T>("final_norm.weight", {final_norm}, false);
  final_norm_bias = make_parameter<T>("final_norm.bias", {final_norm}, false);
}

template <class T>
void trunk<T>::append_parameters(std::vector<nn::parameter<T>*>& all) {
  all.push_back(&embedding);
  if (shape_.new_words > 0) all.push_back(&new_words);
  if (shape_.positions > 0) all.push_back(&position);
  if (shape_.window > 0) {
    all.push_back(&window_weight);
    all.push_back(&window_bias);
  }
  if (shape_.layers == 0) attention.append_to(all);
  for (nn::encoder_parameters<T>& l : layers) l.append_to(all);
  if (shape_.norm_first && shape_.layers > 0) {
    all.push_back(&final_norm_weight);
    all.push_back(&final_norm_bias);
  }
}

template <class T>
nn::self_attention_shape trunk<T>::attention_shape(const nn::batch& b) const {
  return {b.size, b.length, shape_.layers == 0 ? shape_.embed : shape_.width, shape_.width,
          shape_.heads};
}

template <class T>
nn::attention_mask_spec trunk<T>::mask(const nn::batch& b) const {
  // Causal attention never looks past a sequence's end, so only the classifier needs the
  // padding mask.
  nn::attention_mask_spec m;
  m.causal = shape_.causal;
  if (!shape_.causal) m.lengths = b.lengths;
  return m;
}

template <class T>
nn::word_window_shape trunk<T>::window_shape(const nn::batch& b) const {
  return {b.size, b.length, shape_.embed, shape_.embed, shape_.window, shape_.causal};
}

template <class T>
void trunk<T>::forward(const nn::batch& b, trunk_cache<T>& c, uint64_t dropout_seed) const {
  const nn::network_shape& s = shape_;
  const int64_t tokens = b.size * b.length;
  const bool dropout = dropout_seed != 0 && s.dropout > 0;
  // ids [B, L] → x [B, L, Ein] (+ positions), dropped out while training
  c.x.resize(static_cast<size_t>(tokens * s.embed));
  nn::embedding_forward(b.ids.data(), embedding.value.data(), s.vocabulary, new_words.value.data(),
                        c.x.data(), tokens, s.embed);
  if (s.positions > 0)
    nn::positional_forward(position.value.data(), c.x.data(), b.size, b.length, s.embed);
  c.drop_x.resize(dropout ? c.x.size() : 0);
  if (dropout) {
    nn::dropout_mask(dropout_seed, s.dropout, c.drop_x.data(), tokens * s.embed);
    nn::dropout_apply(c.drop_x.data(), c.x.data(), tokens * s.embed);
  }
  // x → each token with its neighbours (the attention's input)
  c.windowed.resize(s.window > 0 ? c.x.size() : 0);
  if (s.window > 0)
    nn::word_window_forward(c.x.data(), b.lengths.data(), window_weight.value.data(),
                            window_bias.value.data(), c.windowed.data(), c.window, window_shape(b));
  const T* attention_in = s.window > 0 ? c.windowed.data() : c.x.data();
  // → y [B, L, E]: the seeds' layer, or the encoder layers one after the other
  c.y.resize(static_cast<size_t>(tokens * s.width));
  const nn::attention_mask_spec m = mask(b);
  if (s.layers == 0) {
    c.blocks.clear();
    nn::self_attention_forward(attention_in, attention.weights(), c.y.data(), c.attention,
                               attention_shape(b), m);
    return;
  }
  c.blocks.resize(static_cast<size_t>(s.layers));
  c.between.resize(static_cast<size_t>(s.layers - 1));
  const nn::encoder_block_shape block{attention_shape(b), s.feedforward, s.norm_first};
  c.stack.resize(s.norm_first ? c.y.size() : 0);
  const T* in = attention_in;
  for (int64_t i = 0; i < s.layers; ++i) {
    const auto k = static_cast<size_t>(i);
    T* out = s.norm_first ? c.stack.data() : c.y.data();
    if (i + 1 < s.layers) {
      c.between[k].resize(c.y.size());
      out = c.between[k].data();
    }
    nn::encoder_block_forward(in, layers[k].weights(), out, c.blocks[k], block, m);
    in = out;
  }
  if (s.norm_first) {  // y = LayerNorm(the residual stream)
    c.final_mean.resize(static_cast<size_t>(tokens));
    c.final_rstd.resize(static_cast<size_t>(tokens));
    nn::layer_norm_forward(c.stack.data(), final_norm_weight.value.data(),
                           final_norm_bias.value.data(), c.y.data(), c.final_mean.data(),
                           c.final_rstd.data(), tokens, s.width);
  }
}

template <class T>
void trunk<T>::backward(const nn::batch& b, const trunk_cache<T>& c, std::vector<T> dy,
                        std::vector<int64_t>& table_rows, std::vector<int64_t>& new_rows) {
  const nn::network_shape& s = shape_;
  const int64_t tokens = b.size * b.length;
  // y = blocks(window(x)); frozen embeddings without positions or new words need no dx, but
  // the word window's weights need the gradient of its output
  const bool need_dx = embedding.trainable || s.positions > 0 || s.new_words > 0;
  const bool need_din = need_dx || s.window > 0;
  std::vector<T> dx(need_din ? static_cast<size_t>(tokens * s.embed) : 0, T(0));
  const T* attention_in = s.window > 0 ? c.windowed.data() : c.x.data();
  const nn::attention_mask_spec m = mask(b);
  if (s.layers == 0) {
    nn::self_attention_backward(dy.data(), attention_in, attention.weights(), c.attention,
                                need_din ? dx.data() : nullptr, attention.grads(),
                                attention_shape(b), m);
  } else {
    const nn::encoder_block_shape block{attention_shape(b), s.feedforward, s.norm_first};
    std::vector<T> dout = std::move(dy), din;
    if (s.norm_first) {  // y = LayerNorm(stack)
      std::vector<T> dstack(dout.size(), T(0));
      nn::layer_norm_backward(dout.data(), c.stack.data(), final_norm_weight.value.data(),
                              c.final_mean.data(), c.final_rstd.data(), dstack.data(),
                              final_norm_weight.grad.data(), final_norm_bias.grad.data(), tokens,
                              s.width);
      dout = std::move(dstack);
    }
    for (int64_t i = s.layers - 1; i >= 0; --i) {
      const auto k = static_cast<size_t>(i);
      const T* in = i == 0 ? attention_in : c.between[k - 1].data();
      T* dinput = nullptr;
      if (i > 0 || need_din) {
        din.assign(dout.size(), T(0));
        dinput = din.data();
      }
      nn::encoder_block_backward(dout.data(), in, layers[k].weights(), c.blocks[k], dinput,
                                 layers[k].grads(), block, m);
      if (dinput == nullptr) break;
      std::swap(dout, din);
    }
    if (need_din) dx = std::move(dout);
  }
  if (s.window > 0) {  // dx holds the gradient of the window's output: take it to the window's input
    std::vector<T> dwindow = std::move(dx);
    dx.assign(need_dx ? dwindow.size() : 0, T(0));
    nn::word_window_backward(dwindow.data(), b.lengths.data(), window_weight.value.data(), c.window,
                             need_dx ? dx.data() : nullptr, window_weight.grad.data(),
                             window_bias.grad.data(), window_shape(b));
  }
  if (!need_dx) {
    embedding.touch(table_rows);
    new_words.touch(new_rows);
    return;
  }
  // x = dropout(embedding[ids] + position[t])
  if (!c.drop_x.empty()) nn::dropout_apply(c.drop_x.data(), dx.data(), tokens * s.embed);
  if (s.positions > 0)
    nn::positional_backward(dx.data(), position.grad.data(), b.size, b.length, s.embed);
  nn::embedding_backward(b.ids.data(), dx.data(),
                         embedding.trainable ? embedding.grad.data() : nullptr, s.vocabulary,
                         s.new_words > 0 ? new_words.grad.data() : nullptr, tokens, s.embed);
  for (int64_t i = 0; i < tokens; ++i) {
    const int64_t id = b.ids[static_cast<size_t>(i)];
    if (id >= s.vocabulary) new_rows.push_back(id - s.vocabulary);
    else if (id >= 0 && embedding.trainable) table_rows.push_back(id);
  }
  embedding.touch(table_rows);
  new_words.touch(new_rows);
}

template class trunk<float>;
template class trunk<double>;

}  // namespace attn::models
