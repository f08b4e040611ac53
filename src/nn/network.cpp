// The text model's forward and backward passes, layer by layer (see network.hpp).
#include "nn/network.hpp"

#include <algorithm>
#include <type_traits>
#include <vector>

#include "nn/attention_pool.hpp"
#include "nn/cross_entropy.hpp"
#include "nn/dropout.hpp"
#include "nn/embedding.hpp"
#include "nn/layer_norm.hpp"
#include "nn/linear_layer.hpp"
#include "nn/max_pool.hpp"
#include "nn/token_pool.hpp"

namespace attn::nn {

int64_t batch::tokens() const {
  int64_t n = 0;
  for (int64_t l : lengths) n += l;
  return n;
}

template <class T>
void parameter<T>::touch(const std::vector<int64_t>& rows) {
  touched.insert(touched.end(), rows.begin(), rows.end());
  std::sort(touched.begin(), touched.end());
  touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
}

template <class T>
void parameter<T>::clear_grad() {
  if (!sparse()) {
    std::fill(grad.begin(), grad.end(), T(0));
    return;
  }
  for (int64_t r : touched)
    std::fill_n(grad.begin() + r * row_width, row_width, T(0));
  touched.clear();
}

namespace {

template <class T>
parameter<T> make(std::string name, shape_t shape, bool decay) {
  parameter<T> p;
  p.name = std::move(name);
  p.value.assign(static_cast<size_t>(shape_numel(shape)), T(0));
  p.grad.assign(p.value.size(), T(0));
  p.shape = std::move(shape);
  p.decay = decay;
  return p;
}

// nn.MultiheadAttention's names, under a prefix: "attention." for the seeds' layer,
// "layers.N.attention." in an encoder layer.
template <class T>
attention_parameters<T> make_attention(const std::string& prefix, int64_t e, int64_t in) {
  attention_parameters<T> a;
  a.wq = make<T>(prefix + "q_proj_weight", {e, in}, true);
  a.wk = make<T>(prefix + "k_proj_weight", {e, in}, true);
  a.wv = make<T>(prefix + "v_proj_weight", {e, in}, true);
  a.bq = make<T>(prefix + "q_proj_bias", {e}, false);
  a.bk = make<T>(prefix + "k_proj_bias", {e}, false);
  a.bv = make<T>(prefix + "v_proj_bias", {e}, false);
  a.wo = make<T>(prefix + "out_proj.weight", {e, e}, true);
  a.bo = make<T>(prefix + "out_proj.bias", {e}, false);
  return a;
}

template <class T>
void add_attention(std::vector<parameter<T>*>& all, attention_parameters<T>& a) {
  for (parameter<T>* p : {&a.wq, &a.bq, &a.wk, &a.bk, &a.wv, &a.bv, &a.wo, &a.bo})
    all.push_back(p);
}

}  // namespace

template <class T>
self_attention_weights<T> attention_parameters<T>::weights() const {
  return {wq.value.data(), bq.value.data(), wk.value.data(), bk.value.data(),
          wv.value.data(), bv.value.data(), wo.value.data(), bo.value.data()};
}

template <class T>
self_attention_grads<T> attention_parameters<T>::grads() {
  return {wq.grad.data(), bq.grad.data(), wk.grad.data(), bk.grad.data(),
          wv.grad.data(), bv.grad.data(), wo.grad.data(), bo.grad.data()};
}

template <class T>
encoder_block_weights<T> encoder_parameters<T>::weights() const {
  return {attention.weights(),        norm1_weight.value.data(),   norm1_bias.value.data(),
          linear1_weight.value.data(), linear1_bias.value.data(), linear2_weight.value.data(),
          linear2_bias.value.data(),  norm2_weight.value.data(),   norm2_bias.value.data()};
}

template <class T>
encoder_block_grads<T> encoder_parameters<T>::grads() {
  return {attention.grads(),         norm1_weight.grad.data(),   norm1_bias.grad.data(),
          linear1_weight.grad.data(), linear1_bias.grad.data(), linear2_weight.grad.data(),
          linear2_bias.grad.data(),  norm2_weight.grad.data(),   norm2_bias.grad.data()};
}

template <class T>
network<T>::network(const network_shape& s, std::vector<int64_t> output_rows,
                    std::vector<int64_t> output_cutoffs)
    : shape_(s), output_rows_(std::move(output_rows)), output_cutoffs_(std::move(output_cutoffs)) {
  const int64_t e = s.width, in = s.embed;
  embedding = make<T>("embedding.weight", {s.vocabulary, in}, false);
  embedding.trainable = s.train_embeddings;
  if (!embedding.trainable) embedding.grad.clear();  // frozen: 50,000 GloVe rows need no gradient
  new_words = make<T>("embedding.new_words", {s.new_words, in}, false);
  embedding.row_width = new_words.row_width = in;
  position = make<T>("position.weight", {s.positions, in}, false);
  window_weight = make<T>("window.weight", {s.window > 0 ? in : 0, s.window * in}, true);
  window_bias = make<T>("window.bias", {s.window > 0 ? in : 0}, false);
  if (s.layers == 0) attention = make_attention<T>("attention.", e, in);
  for (int64_t i = 0; i < s.layers; ++i) {
    const std::string prefix = "layers." + std::to_string(i) + ".";
    encoder_parameters<T> l;
    l.attention = make_attention<T>(prefix + "attention.", e, e);
    l.norm1_weight = make<T>(prefix + "norm1.weight", {e}, false);
    l.norm1_bias = make<T>(prefix + "norm1.bias", {e}, false);
    l.linear1_weight = make<T>(prefix + "linear1.weight", {s.feedforward, e}, true);
    l.linear1_bias = make<T>(prefix + "linear1.bias", {s.feedforward}, false);
    l.linear2_weight = make<T>(prefix + "linear2.weight", {e, s.feedforward}, true);
    l.linear2_bias = make<T>(prefix + "linear2.bias", {e}, false);
    l.norm2_weight = make<T>(prefix + "norm2.weight", {e}, false);
    l.norm2_bias = make<T>(prefix + "norm2.bias", {e}, false);
    layers.push_back(std::move(l));
  }
  const int64_t final_norm = s.norm_first && s.layers > 0 ? e : 0;
  final_norm_weight = make<T>("final_norm.weight", {final_norm}, false);
  final_norm_bias = make<T>("final_norm.bias", {final_norm}, false);
  pool_query = make<T>("pool.query", {s.pool == pool_kind::attention ? e : 0}, false);
  if (s.tied_output) {  // no output matrix: the embedding rows stand in for it
    w1 = make<T>("output.transform.weight", {s.hidden, s.pooled()}, true);
    b1 = make<T>("output.transform.bias", {s.hidden}, false);
    b2 = make<T>("output.bias", {s.classes}, false);
    // The adaptive softmax's cluster tokens: output rows, without decay as the table's rows
    const int64_t tokens = adaptive() ? static_cast<int64_t>(output_cutoffs_.size()) - 1 : 0;
    token_weight = make<T>("output.clusters.weight", {tokens, s.hidden}, false);
    token_bias = make<T>("output.clusters.bias", {tokens}, false);
    return;
  }
  w1 = make<T>("head.0.weight", {s.hidden, s.pooled()}, true);
  b1 = make<T>("head.0.bias", {s.hidden}, false);
  w2 = make<T>("head.2.weight", {s.classes, s.hidden}, true);
  b2 = make<T>("head.2.bias", {s.classes}, false);
}

template <class T>
bool network<T>::output_rows_train() const {
  if (embedding.trainable) return true;
  return std::any_of(output_rows_.begin(), output_rows_.end(),
                     [&](int64_t id) { return id >= shape_.vocabulary; });
}

template <class T>
std::vector<parameter<T>*> network<T>::parameters() {
  std::vector<parameter<T>*> all{&embedding};
  if (shape_.new_words > 0) all.push_back(&new_words);
  if (shape_.positions > 0) all.push_back(&position);
  if (shape_.window > 0) {
    all.push_back(&window_weight);
    all.push_back(&window_bias);
  }
  if (shape_.layers == 0) add_attention(all, attention);
  for (encoder_parameters<T>& l : layers) {
    add_attention(all, l.attention);
    for (parameter<T>* p : {&l.norm1_weight, &l.norm1_bias, &l.linear1_weight, &l.linear1_bias,
                            &l.linear2_weight, &l.linear2_bias, &l.norm2_weight, &l.norm2_bias})
      all.push_back(p);
  }
  if (shape_.norm_first && shape_.layers > 0) {
    all.push_back(&final_norm_weight);
    all.push_back(&final_norm_bias);
  }
  if (shape_.pool == pool_kind::attention) all.push_back(&pool_query);
  for (parameter<T>* p : {&w1, &b1, &w2, &b2})
    if (p != &w2 || !shape_.tied_output) all.push_back(p);
  if (adaptive()) {
    all.push_back(&token_weight);
    all.push_back(&token_bias);
  }
  return all;
}

template <class T>
std::vector<const parameter<T>*> network<T>::parameters() const {
  std::vector<const parameter<T>*> all;
  for (parameter<T>* p : const_cast<network*>(this)->parameters()) all.push_back(p);
  return all;
}

template <class T>
void network<T>::zero_grad() {
  for (parameter<T>* p : parameters())
    if (p->trainable) p->clear_grad();
}

template <class T>
self_attention_shape network<T>::attention_shape(const batch& b) const {
  return {b.size, b.length, shape_.layers == 0 ? shape_.embed : shape_.width, shape_.width,
          shape_.heads};
}

template <class T>
attention_mask_spec network<T>::mask(const batch& b) const {
  // Causal attention never looks past a sequence's end, so only the classifier needs the
  // padding mask.
  attention_mask_spec m;
  m.causal = shape_.causal;
  if (!shape_.causal) m.lengths = b.lengths;
  return m;
}

template <class T>
word_window_shape network<T>::window_shape(const batch& b) const {
  return {b.size, b.length, shape_.embed, shape_.embed, shape_.window, shape_.causal};
}

template <class T>
T network<T>::forward(const batch& b, network_cache<T>& c, uint64_t dropout_seed) const {
  const network_shape& s = shape_;
  const int64_t tokens = b.size * b.length, rows = static_cast<int64_t>(b.rows.size());
  const bool dropout = dropout_seed != 0 && s.dropout > 0;
  // ids [B, L] → x [B, L, Ein] (+ positions), dropped out while training
  c.x.resize(static_cast<size_t>(tokens * s.embed));
  embedding_forward(b.ids.data(), embedding.value.data(), s.vocabulary, new_words.value.data(),
                    c.x.data(), tokens, s.embed);
  if (s.positions > 0)
    positional_forward(position.value.data(), c.x.data(), b.size, b.length, s.embed);
  c.drop_x.resize(dropout ? c.x.size() : 0);
  if (dropout) {
    dropout_mask(dropout_seed, s.dropout, c.drop_x.data(), tokens * s.embed);
    dropout_apply(c.drop_x.data(), c.x.data(), tokens * s.embed);
  }
  // x → each token with its neighbours (the attention's input)
  c.windowed.resize(s.window > 0 ? c.x.size() : 0);
  if (s.window > 0)
    word_window_forward(c.x.data(), b.lengths.data(), window_weight.value.data(),
                        window_bias.value.data(), c.windowed.data(), c.window, window_shape(b));
  const T* attention_in = s.window > 0 ? c.windowed.data() : c.x.data();
  // → y [B, L, E]: the seeds' layer, or the encoder layers one after the other
  c.y.resize(static_cast<size_t>(tokens * s.width));
  const attention_mask_spec m = mask(b);
  if (s.layers == 0) {
    c.blocks.clear();
    self_attention_forward(attention_in, attention.weights(), c.y.data(), c.attention,
                           attention_shape(b), m);
  } else {
    c.blocks.resize(static_cast<size_t>(s.layers));
    c.between.resize(static_cast<size_t>(s.layers - 1));
    const encoder_block_shape block{attention_shape(b), s.feedforward, s.norm_first};
    c.stack.resize(s.norm_first ? c.y.size() : 0);
    const T* in = attention_in;
    for (int64_t i = 0; i < s.layers; ++i) {
      const auto k = static_cast<size_t>(i);
      T* out = s.norm_first ? c.stack.data() : c.y.data();
      if (i + 1 < s.layers) {
        c.between[k].resize(c.y.size());
        out = c.between[k].data();
      }
      encoder_block_forward(in, layers[k].weights(), out, c.blocks[k], block, m);
      in = out;
    }
    if (s.norm_first) {  // y = LayerNorm(the residual stream)
      c.final_mean.resize(static_cast<size_t>(tokens));
      c.final_rstd.resize(static_cast<size_t>(tokens));
      layer_norm_forward(c.stack.data(), final_norm_weight.value.data(), final_norm_bias.value.data(),
                         c.y.data(), c.final_mean.data(), c.final_rstd.data(), tokens, s.width);
    }
  }
  // A batch with no rows asks for the token vectors y alone (embed): no pooling and no output
  // head, whose tied table gather alone is classes × embed floats a forward.
  if (rows == 0) {
    c.logits.clear();
    c.row_lse.clear();
    return T(0);
  }
  // y → pooled [R, P]: the mean, the max, both side by side, or attention-weighted
  const int64_t p = s.pooled();
  c.pooled.resize(static_cast<size_t>(rows * p));
  std::vector<T> part(s.pool == pool_kind::mean_max ? static_cast<size_t>(rows * s.width) : 0);
  if (s.pool == pool_kind::attention) {
    c.pool_weights.resize(static_cast<size_t>(rows * b.length));
    attention_pool_forward(c.y.data(), pool_query.value.data(), b.rows.data(), c.pooled.data(),
                           c.pool_weights.data(), rows, b.length, s.width);
  }
  if (s.pool == pool_kind::token)
    token_pool_forward(c.y.data(), b.rows.data(), c.pooled.data(), rows, b.length, s.width);
  if (s.pool == pool_kind::mean || s.pool == pool_kind::mean_max) {
    T* mean = s.pool == pool_kind::mean ? c.pooled.data() : part.data();
    mean_pool_forward(c.y.data(), b.rows.data(), mean, rows, b.length, s.width);
  }
  if (s.pool == pool_kind::max || s.pool == pool_kind::mean_max) {
    c.argmax.resize(static_cast<size_t>(rows * s.width));
    std::vector<T> max(s.pool == pool_kind::max ? 0 : part.size());
    max_pool_forward(c.y.data(), b.rows.data(), s.pool == pool_kind::max ? c.pooled.data() : max.data(),
                     c.argmax.data(), rows, b.length, s.width);
    for (int64_t r = 0; r < rows && s.pool == pool_kind::mean_max; ++r) {  // [mean | max]
      std::copy_n(part.data() + r * s.width, s.width, c.pooled.data() + r * p);
      std::copy_n(max.data() + r * s.width, s.width, c.pooled.data() + r * p + s.width);
    }
  }
  c.drop_pooled.resize(dropout ? c.pooled.size() : 0);
  if (dropout) {
    dropout_mask(~dropout_seed, s.dropout, c.drop_pooled.data(), rows * p);
    dropout_apply(c.drop_pooled.data(), c.pooled.data(), rows * p);
  }
  // pooled → pre → hidden [R, hidden] → logits [R, C]
  c.pre.resize(static_cast<size_t>(rows * s.hidden));
  c.hidden.resize(c.pre.size());
  linear_forward(c.pooled.data(), w1.value.data(), b1.value.data(), c.pre.data(), rows, p,
                 s.hidden);
  c.output_fused = false;
  if (!fuses_output(b, dropout_seed)) c.logits.resize(static_cast<size_t>(rows * s.classes));
  if (s.tied_output) {
    // hidden = pre (no ReLU: it is compared with embedding rows, which have both signs);
    // logits = hidden·table[output_rows]ᵀ + bias
    std::copy(c.pre.begin(), c.pre.end(), c.hidden.begin());
    gather_output_table(c);
    if (adaptive()) return adaptive_forward(b, c, dropout_seed != 0);
    if (fuses_output(b, dropout_seed)) return fused_output_forward(b, c);
    linear_forward(c.hidden.data(), c.output_table.data(), b2.value.data(), c.logits.data(), rows,
                   s.hidden, s.classes, output_bf16_);
  } else {
    relu_forward(c.pre.data(), c.hidden.data(), rows * s.hidden);
    linear_forward(c.hidden.data(), w2.value.data(), b2.value.data(), c.logits.data(), rows,
                   s.hidden, s.classes);
  }
  c.row_lse.clear();
  if (b.targets.size() != b.rows.size()) return T(0);
  c.row_lse.resize(static_cast<size_t>(rows));
  return cross_entropy_forward(c.logits.data(), b.targets.data(), static_cast<T*>(nullptr), rows,
                               s.classes, c.row_lse.data());
}

template <class T>
void network<T>::backward(const batch& b, const network_cache<T>& c) {
  const network_shape& s = shape_;
  const int64_t tokens = b.size * b.length, rows = static_cast<int64_t>(b.rows.size());
  const int64_t p = s.pooled();
  // loss = cross_entropy(logits, targets)
  std::vector<T>& dlogits = c.dlogits;  // every entry written below
  if (!adaptive() && !c.output_fused) {
    dlogits.resize(c.logits.size());
    // (b2's gradient, Σ dlogits over rows, is summed there, while each row is in cache)
    cross_entropy_backward(c.logits.data(), b.targets.data(), dlogits.data(), rows, s.classes, T(1),
                           c.row_lse.size() == static_cast<size_t>(rows) ? c.row_lse.data() : nullptr,
                           b2.grad.data());
  }
  std::vector<T> dhidden(c.hidden.size(), T(0)), dpre;
  std::vector<int64_t> table_rows, new_rows;  // embedding rows given a gradient
  if (adaptive()) {
    dpre = adaptive_backward(b, c, table_rows, new_rows);
  } else if (c.output_fused) {  // forward took the gradients already
    for (int64_t j = 0; j < s.classes; ++j) b2.grad[static_cast<size_t>(j)] += c.dbias_fused[static_cast<size_t>(j)];
    if (output_rows_train()) output_rows_backward(c.dtable, table_rows, new_rows);
    dpre = c.dhidden_fused;  // hidden = pre
  } else if (s.tied_output) {
    // logits = hidden·Tᵀ + b2 with T = table[output_rows]: dT goes back to the rows it came from
    const bool rows_train = output_rows_train();  // frozen rows need no dT (a V×Ein product)
    std::vector<T>& dtable = c.dtable;
    dtable.assign(rows_train ? c.output_table.size() : 0, T(0));
    linear_backward(dlogits.data(), c.hidden.data(), c.output_table.data(), dhidden.data(),
                    rows_train ? dtable.data() : nullptr, static_cast<T*>(nullptr), rows, s.hidden,
                    s.classes, output_bf16_);
    if (rows_train) output_rows_backward(dtable, table_rows, new_rows);
    dpre = std::move(dhidden);  // hidden = pre
  } else {
    // logits = hidden·W2ᵀ + b2
    linear_backward(dlogits.data(), c.hidden.data(), w2.value.data(), dhidden.data(),
                    w2.grad.data(), static_cast<T*>(nullptr), rows, s.hidden, s.classes);
    // hidden = relu(pre)
    dpre.assign(c.pre.size(), T(0));
    relu_backward(dhidden.data(), c.pre.data(), dpre.data(), rows * s.hidden);
  }
  // pre = pooled·W1ᵀ + b1
  std::vector<T> dpooled(c.pooled.size(), T(0));
  linear_backward(dpre.data(), c.pooled.data(), w1.value.data(), dpooled.data(), w1.grad.data(),
                  b1.grad.data(), rows, p, s.hidden);
  // pooled = dropout(pool(y))
  if (!c.drop_pooled.empty()) dropout_apply(c.drop_pooled.data(), dpooled.data(), rows * p);
  std::vector<T> dy(c.y.size(), T(0));
  if (s.pool == pool_kind::token) {
    token_pool_backward(dpooled.data(), b.rows.data(), dy.data(), rows, b.length, s.width);
  } else if (s.pool == pool_kind::mean) {
    mean_pool_backward(dpooled.data(), b.rows.data(), dy.data(), rows, b.length, s.width);
  } else if (s.pool == pool_kind::attention) {
    attention_pool_backward(dpooled.data(), c.y.data(), pool_query.value.data(), b.rows.data(),
                            c.pool_weights.data(), dy.data(), pool_query.grad.data(), rows,
                            b.length, s.width);
  } else if (s.pool == pool_kind::max) {
    max_pool_backward(dpooled.data(), b.rows.data(), c.argmax.data(), dy.data(), rows, b.length,
                      s.width);
  } else {  // pooled = [mean | max]
    std::vector<T> dmean(static_cast<size_t>(rows * s.width)), dmax(dmean.size());
    for (int64_t r = 0; r < rows; ++r) {
      std::copy_n(dpooled.data() + r * p, s.width, dmean.data() + r * s.width);
      std::copy_n(dpooled.data() + r * p + s.width, s.width, dmax.data() + r * s.width);
    }
    mean_pool_backward(dmean.data(), b.rows.data(), dy.data(), rows, b.length, s.width);
    max_pool_backward(dmax.data(), b.rows.data(), c.argmax.data(), dy.data(), rows, b.length,
                      s.width);
  }
  // y = blocks(window(x)); frozen embeddings without positions or new words need no dx, but
  // the word window's weights need the gradient of its output
  const bool need_dx = embedding.trainable || s.positions > 0 || s.new_words > 0;
  const bool need_din = need_dx || s.window > 0;
  std::vector<T> dx(need_din ? static_cast<size_t>(tokens * s.embed) : 0, T(0));
  const T* attention_in = s.window > 0 ? c.windowed.data() : c.x.data();
  const attention_mask_spec m = mask(b);
  if (s.layers == 0) {
    self_attention_backward(dy.data(), attention_in, attention.weights(), c.attention,
                            need_din ? dx.data() : nullptr, attention.grads(), attention_shape(b),
                            m);
  } else {
    const encoder_block_shape block{attention_shape(b), s.feedforward, s.norm_first};
    std::vector<T> dout = std::move(dy), din;
    if (s.norm_first) {  // y = LayerNorm(stack)
      std::vector<T> dstack(dout.size(), T(0));
      layer_norm_backward(dout.data(), c.stack.data(), final_norm_weight.value.data(),
                          c.final_mean.data(), c.final_rstd.data(), dstack.data(),
                          final_norm_weight.grad.data(), final_norm_bias.grad.data(), tokens, s.width);
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
      encoder_block_backward(dout.data(), in, layers[k].weights(), c.blocks[k], dinput,
                             layers[k].grads(), block, m);
      if (dinput == nullptr) break;
      std::swap(dout, din);
    }
    if (need_din) dx = std::move(dout);
  }
  if (s.window > 0) {  // dx holds the gradient of the window's output: take it to the window's input
    std::vector<T> dwindow = std::move(dx);
    dx.assign(need_dx ? dwindow.size() : 0, T(0));
    word_window_backward(dwindow.data(), b.lengths.data(), window_weight.value.data(), c.window,
                         need_dx ? dx.data() : nullptr, window_weight.grad.data(),
                         window_bias.grad.data(), window_shape(b));
  }
  if (!need_dx) {
    embedding.touch(table_rows);
    new_words.touch(new_rows);
    return;
  }
  // x = dropout(embedding[ids] + position[t])
  if (!c.drop_x.empty()) dropout_apply(c.drop_x.data(), dx.data(), tokens * s.embed);
  if (s.positions > 0)
    positional_backward(dx.data(), position.grad.data(), b.size, b.length, s.embed);
  embedding_backward(b.ids.data(), dx.data(), embedding.trainable ? embedding.grad.data() : nullptr,
                     s.vocabulary, s.new_words > 0 ? new_words.grad.data() : nullptr, tokens,
                     s.embed);
  for (int64_t i = 0; i < tokens; ++i) {
    const int64_t id = b.ids[static_cast<size_t>(i)];
    if (id >= s.vocabulary) new_rows.push_back(id - s.vocabulary);
    else if (id >= 0 && embedding.trainable) table_rows.push_back(id);
  }
  embedding.touch(table_rows);
  new_words.touch(new_rows);
}

template <class T>
T network<T>::adaptive_forward(const batch& b, network_cache<T>& c, bool training) const {
  const network_shape& s = shape_;
  const auto rows = static_cast<int64_t>(b.rows.size());
  const adaptive_cuts cuts = this->cuts();
  const bool targets = b.targets.size() == b.rows.size();
  // (training leaves logits as they were: resizing them back for each held-out pass would zero
  // R × C floats, 268 MB at a 16k vocabulary, every time)
  c.row_lse.clear();
  if (!training) {  // every class's log-probability: predict, eval, the held-out scores
    c.logits.resize(static_cast<size_t>(rows * s.classes));
    c.token_scores.resize(static_cast<size_t>(rows * cuts.clusters()));
    linear_forward(c.hidden.data(), c.output_table.data(), b2.value.data(), c.logits.data(), rows,
                   s.hidden, s.classes);
    linear_forward(c.hidden.data(), token_weight.value.data(), token_bias.value.data(),
                   c.token_scores.data(), rows, s.hidden, cuts.clusters());
    adaptive_log_probabilities(c.logits.data(), c.token_scores.data(), rows, cuts);
  }
  if (!targets) {
    c.adaptive.head_targets.clear();
    return T(0);
  }
  return adaptive_output_forward(c.hidden.data(), c.output_table.data(), b2.value.data(),
                                 token_weight.value.data(), token_bias.value.data(), b.targets.data(),
                                 rows, s.hidden, cuts, c.adaptive, output_bf16_);
}

template <class T>
std::vector<T> network<T>::adaptive_backward(const batch& b, const network_cache<T>& c,
                                             std::vector<int64_t>& table_rows,
                                             std::vector<int64_t>& new_rows) {
  const network_shape& s = shape_;
  const auto rows = static_cast<int64_t>(b.rows.size());
  std::vector<T> dhidden(c.hidden.size(), T(0));
  if (c.adaptive.head_targets.size() != static_cast<size_t>(rows)) return dhidden;  // no loss
  // As the full softmax's tied output: dT goes back to the embedding rows it came from
  const bool rows_train = output_rows_train();
  std::vector<T>& dtable = c.dtable;
  if (rows_train && !embedding.trainable) {
    // A frozen table: only the learned words' classes need their row's gradient, [M, Ein]
    std::vector<int64_t> learned;
    for (int64_t k = 0; k < s.classes; ++k)
      if (output_rows_[static_cast<size_t>(k)] >= s.vocabulary) learned.push_back(k);
    dtable.assign(learned.size() * static_cast<size_t>(s.embed), T(0));
    adaptive_output_backward(c.hidden.data(), c.output_table.data(), c.adaptive, rows, s.hidden, cuts(),
                             dhidden.data(), dtable.data(), b2.grad.data(), token_weight.grad.data(),
                             token_bias.grad.data(), output_bf16_, &learned);
    for (size_t m = 0; m < learned.size(); ++m) {
      const int64_t row = output_rows_[static_cast<size_t>(learned[m])] - s.vocabulary;
      T* to = new_words.grad.data() + row * s.embed;
      const T* from = dtable.data() + static_cast<int64_t>(m) * s.embed;
      for (int64_t j = 0; j < s.embed; ++j) to[j] += from[j];
      new_rows.push_back(row);
    }
    return dhidden;  // hidden = pre
  }
  dtable.assign(rows_train ? c.output_table.size() : 0, T(0));
  adaptive_output_backward(c.hidden.data(), c.output_table.data(), c.adaptive, rows, s.hidden, cuts(),
                           dhidden.data(), rows_train ? dtable.data() : nullptr,
                           b2.grad.data(), token_weight.grad.data(), token_bias.grad.data(),
                           output_bf16_);
  if (rows_train) output_rows_backward(dtable, table_rows, new_rows);
  return dhidden;  // hidden = pre
}

template <class T>
bool network<T>::fuses_output(const batch& b, uint64_t dropout_seed) const {
  // Training (a seed given), float32 products, the full softmax over tied rows, targets to score.
  return std::is_same_v<T, float> && dropout_seed != 0 && shape_.tied_output && !adaptive() &&
         !output_bf16_ && !b.rows.empty() && b.targets.size() == b.rows.size() &&
         fused_output_pays(shape_.classes, shape_.hidden);
}

template <class T>
T network<T>::fused_output_forward(const batch& b, network_cache<T>& c) const {
  if constexpr (std::is_same_v<T, float>) {
    const network_shape& s = shape_;
    const auto rows = static_cast<int64_t>(b.rows.size());
    const bool rows_train = output_rows_train();
    c.logits.clear();
    c.row_lse.clear();
    c.dtable.resize(rows_train ? c.output_table.size() : 0);
    c.dhidden_fused.resize(c.hidden.size());
    c.dbias_fused.assign(static_cast<size_t>(s.classes), 0.0f);
    c.output_fused = true;
    return fused_output_loss_and_gradients(c.hidden.data(), c.output_table.data(), b2.value.data(),
                                           b.targets.data(), rows, s.hidden, s.classes,
                                           c.dhidden_fused.data(), rows_train ? c.dtable.data() : nullptr,
                                           c.dbias_fused.data(), c.fused_scratch);
  } else {
    (void)b, (void)c;
    return T(0);  // never: fuses_output() is false for double
  }
}

template <class T>
void network<T>::gather_output_table(network_cache<T>& c) const {
  const network_shape& s = shape_;
  const auto size = static_cast<size_t>(s.classes * s.embed);
  const T* frozen = embedding.trainable ? nullptr : embedding.value.data();
  if (frozen == nullptr || c.output_table_frozen_from != frozen || c.output_table.size() != size) {
    c.output_table.resize(size);
    embedding_forward(output_rows_.data(), embedding.value.data(), s.vocabulary, new_words.value.data(),
                      c.output_table.data(), s.classes, s.embed);
    c.output_table_frozen_from = frozen;
    return;
  }
  // The frozen rows are as the last forward gathered them; the learned words' rows move.
  for (int64_t i = 0; i < s.classes; ++i) {
    const int64_t id = output_rows_[static_cast<size_t>(i)];
    if (id < s.vocabulary) continue;
    const T* row = new_words.value.data() + (id - s.vocabulary) * s.embed;
    std::copy(row, row + s.embed, c.output_table.begin() + i * s.embed);
  }
}

template <class T>
void network<T>::output_rows_backward(const std::vector<T>& dtable, std::vector<int64_t>& table_rows,
                                      std::vector<int64_t>& new_rows) {
  const network_shape& s = shape_;
  embedding_backward(output_rows_.data(), dtable.data(), embedding.trainable ? embedding.grad.data() : nullptr,
                     s.vocabulary, s.new_words > 0 ? new_words.grad.data() : nullptr, s.classes, s.embed);
  for (int64_t id : output_rows_) {
    if (id >= s.vocabulary) new_rows.push_back(id - s.vocabulary);
    else if (embedding.trainable) table_rows.push_back(id);
  }
}

template struct parameter<float>;
template struct parameter<double>;
template struct attention_parameters<float>;
template struct attention_parameters<double>;
template struct encoder_parameters<float>;
template struct encoder_parameters<double>;
template class network<float>;
template class network<double>;

}  // namespace attn::nn
