// The translator's forward and backward, layer by layer (see translator.hpp).
#include "models/translator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "attn/error.hpp"
#include "nn/dropout.hpp"
#include "nn/embedding.hpp"
#include "nn/layer_norm.hpp"
#include "nn/linear_layer.hpp"
#include "nn/scratch.hpp"
#include "nn/smoothed_cross_entropy.hpp"

namespace attn::models {

using nn::make_parameter;

double sinusoid(int64_t t, int64_t j, int64_t width) {
  // PE(t, 2i) = sin(t / 10000^(2i/E)), PE(t, 2i + 1) = cos(t / 10000^(2i/E))
  const double angle = static_cast<double>(t) / std::pow(10000.0, static_cast<double>(j - j % 2) / static_cast<double>(width));
  return j % 2 == 0 ? std::sin(angle) : std::cos(angle);
}

template <class T>
translator<T>::translator(const translator_shape& s) : shape_(s) {
  const int64_t e = s.width, f = s.feedforward;
  embedding = make_parameter<T>("embedding.weight", {s.vocabulary, e}, false);
  for (int64_t i = 0; i < s.encoder_layers; ++i) {
    encoder.push_back(nn::make_encoder_parameters<T>(i, e, f));
    std::vector<nn::parameter<T>*> all;
    encoder.back().append_to(all);
    for (nn::parameter<T>* p : all) p->name = "encoder." + p->name;  // encoder.layers.N.…
  }
  encoder_norm_weight = make_parameter<T>("encoder.norm.weight", {e}, false);
  encoder_norm_bias = make_parameter<T>("encoder.norm.bias", {e}, false);
  for (int64_t i = 0; i < s.decoder_layers; ++i)
    decoder.push_back(nn::make_decoder_parameters<T>("decoder.layers." + std::to_string(i) + ".", e, f));
  decoder_norm_weight = make_parameter<T>("decoder.norm.weight", {e}, false);
  decoder_norm_bias = make_parameter<T>("decoder.norm.bias", {e}, false);
}

template <class T>
void translator<T>::append_parameters(std::vector<nn::parameter<T>*>& all) {
  all.push_back(&embedding);
  for (nn::encoder_parameters<T>& l : encoder) l.append_to(all);
  all.push_back(&encoder_norm_weight);
  all.push_back(&encoder_norm_bias);
  for (nn::decoder_parameters<T>& l : decoder) l.append_to(all);
  all.push_back(&decoder_norm_weight);
  all.push_back(&decoder_norm_bias);
}

template <class T>
nn::encoder_block_shape translator<T>::encoder_shape(const translation_batch& b) const {
  return {{b.size, b.source_length, shape_.width, shape_.width, shape_.heads}, shape_.feedforward, true};
}

template <class T>
nn::decoder_block_shape translator<T>::decoder_shape(const translation_batch& b) const {
  return {.batch = b.size, .target = b.target_length, .source = b.source_length, .width = shape_.width,
          .heads = shape_.heads, .feedforward = shape_.feedforward};
}

template <class T>
void translator<T>::embed(const std::vector<int64_t>& ids, int64_t batch, int64_t length, std::vector<T>& x,
                          std::vector<T>& drop, uint64_t dropout_seed) const {
  const int64_t e = shape_.width, n = batch * length;
  x.resize(static_cast<size_t>(n * e));
  nn::embedding_forward(ids.data(), embedding.value.data(), shape_.vocabulary, static_cast<const T*>(nullptr),
                        x.data(), n, e);
  const double scale = std::sqrt(static_cast<double>(e));
  std::vector<double> positions(static_cast<size_t>(length * e));  // once per position, not per sentence
  for (int64_t t = 0; t < length; ++t)
    for (int64_t j = 0; j < e; ++j) positions[static_cast<size_t>(t * e + j)] = sinusoid(t, j, e);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < e; ++j) {
      T& v = x[static_cast<size_t>(i * e + j)];
      v = static_cast<T>(static_cast<double>(v) * scale + positions[static_cast<size_t>((i % length) * e + j)]);
    }
  const bool dropout = dropout_seed != 0 && shape_.dropout > 0;
  drop.resize(dropout ? x.size() : 0);
  if (dropout) {
    nn::dropout_mask(dropout_seed, shape_.dropout, drop.data(), n * e);
    nn::dropout_apply(drop.data(), x.data(), n * e);
  }
}

template <class T>
void translator<T>::encode(const translation_batch& b, translator_cache<T>& c, uint64_t dropout_seed) const {
  const int64_t e = shape_.width, sources = b.size * b.source_length;
  embed(b.source, b.size, b.source_length, c.source_x, c.source_drop, dropout_seed);
  nn::attention_mask_spec padding;
  padding.lengths = b.source_lengths;
  c.encoder.resize(encoder.size());
  c.encoder_out.resize(encoder.size());
  const T* in = c.source_x.data();
  for (size_t i = 0; i < encoder.size(); ++i) {
    c.encoder_out[i].resize(static_cast<size_t>(sources * e));
    nn::encoder_block_shape shape = encoder_shape(b);
    shape.dropout = shape_.residual_dropout;
    shape.dropout_seed = nn::seed_for(dropout_seed, 100 + i);
    nn::encoder_block_forward(in, encoder[i].weights(), c.encoder_out[i].data(), c.encoder[i], shape, padding);
    in = c.encoder_out[i].data();
  }
  c.memory.resize(static_cast<size_t>(sources * e));
  c.memory_mean.resize(static_cast<size_t>(sources));
  c.memory_rstd.resize(static_cast<size_t>(sources));
  nn::layer_norm_forward(in, encoder_norm_weight.value.data(), encoder_norm_bias.value.data(), c.memory.data(),
                         c.memory_mean.data(), c.memory_rstd.data(), sources, e);
}

template <class T>
T translator<T>::forward(const translation_batch& b, translator_cache<T>& c, uint64_t dropout_seed) const {
  const int64_t e = shape_.width, v = shape_.vocabulary, targets = b.size * b.target_length;
  // the encoder: source → memory
  encode(b, c, dropout_seed);
  // the decoder: target so far + memory → each position's vector (~seed: a mask apart from the source's)
  embed(b.target_in, b.size, b.target_length, c.target_x, c.target_drop, dropout_seed != 0 ? ~dropout_seed : 0);
  c.decoder.resize(decoder.size());
  c.decoder_out.resize(decoder.size());
  const T* in = c.target_x.data();
  for (size_t i = 0; i < decoder.size(); ++i) {
    c.decoder_out[i].resize(static_cast<size_t>(targets * e));
    nn::decoder_block_shape shape = decoder_shape(b);
    shape.dropout = shape_.residual_dropout;
    shape.dropout_seed = nn::seed_for(dropout_seed, 200 + i);
    nn::decoder_block_forward(in, c.memory.data(), b.source_lengths, decoder[i], c.decoder_out[i].data(),
                              c.decoder[i], shape);
    in = c.decoder_out[i].data();
  }
  c.y.resize(static_cast<size_t>(targets * e));
  c.y_mean.resize(static_cast<size_t>(targets));
  c.y_rstd.resize(static_cast<size_t>(targets));
  nn::layer_norm_forward(in, decoder_norm_weight.value.data(), decoder_norm_bias.value.data(), c.y.data(),
                         c.y_mean.data(), c.y_rstd.data(), targets, e);
  // the real target positions' scores against the embedding rows
  c.rows.clear();
  c.targets.clear();
  for (int64_t i = 0; i < targets; ++i)
    if (b.target_out[static_cast<size_t>(i)] >= 0) {
      c.rows.push_back(i);
      c.targets.push_back(b.target_out[static_cast<size_t>(i)]);
    }
  const auto r = static_cast<int64_t>(c.rows.size());
  c.scored.resize(static_cast<size_t>(r * e));
  for (int64_t k = 0; k < r; ++k)
    std::copy_n(c.y.data() + c.rows[static_cast<size_t>(k)] * e, e, c.scored.data() + k * e);
  c.logits.resize(static_cast<size_t>(r * v));
  c.row_lse.resize(static_cast<size_t>(r));
  nn::linear_forward(c.scored.data(), embedding.value.data(), static_cast<const T*>(nullptr), c.logits.data(), r, e, v);
  return nn::smoothed_cross_entropy_forward(c.logits.data(), c.targets.data(), r, v, shape_.label_smoothing,
                                            c.row_lse.data());
}

template <class T>
void translator<T>::backward(const translation_batch& b, translator_cache<T>& c) {
  const int64_t e = shape_.width, v = shape_.vocabulary;
  const int64_t sources = b.size * b.source_length, targets = b.size * b.target_length;
  const auto r = static_cast<int64_t>(c.rows.size());
  // logits = scored·embeddingᵀ; their gradient written over them (each element from its own
  // logit), dscored written whole, not added into: no zeros first
  T* const dlogits = c.logits.data();
  nn::scratch<T> dscored(static_cast<size_t>(r * e));
  nn::smoothed_cross_entropy_backward(c.logits.data(), c.targets.data(), c.row_lse.data(), dlogits, r, v,
                                      shape_.label_smoothing);
  nn::linear_backward_writing_dx(dlogits, c.scored.data(), embedding.value.data(), dscored.data(),
                                 embedding.grad.data(), static_cast<T*>(nullptr), r, e, v);
  std::vector<T> dy(static_cast<size_t>(targets * e), T(0));
  for (int64_t k = 0; k < r; ++k)
    for (int64_t j = 0; j < e; ++j) dy[static_cast<size_t>(c.rows[static_cast<size_t>(k)] * e + j)] += dscored.data()[k * e + j];
  // the decoder's final norm, then its layers from the last; the memory gathers every layer's gradient
  const T* last = decoder.empty() ? c.target_x.data() : c.decoder_out.back().data();
  std::vector<T> dout(dy.size(), T(0)), din;
  nn::layer_norm_backward(dy.data(), last, decoder_norm_weight.value.data(), c.y_mean.data(), c.y_rstd.data(),
                          dout.data(), decoder_norm_weight.grad.data(), decoder_norm_bias.grad.data(), targets, e);
  std::vector<T> dmemory(static_cast<size_t>(sources * e), T(0));
  for (size_t i = decoder.size(); i-- > 0;) {
    const T* in = i == 0 ? c.target_x.data() : c.decoder_out[i - 1].data();
    din.assign(dout.size(), T(0));
    nn::decoder_block_backward(dout.data(), in, c.memory.data(), b.source_lengths, decoder[i], c.decoder[i],
                               din.data(), dmemory.data(), decoder_shape(b));
    std::swap(dout, din);
  }
  // the target's embeddings: x = dropout(embedding[id]·√E + position)
  const double scale = std::sqrt(static_cast<double>(e));
  const auto embedding_backward = [&](const std::vector<int64_t>& ids, std::vector<T>& dx, const std::vector<T>& drop) {
    if (!drop.empty()) nn::dropout_apply(drop.data(), dx.data(), static_cast<int64_t>(dx.size()));
    for (T& g : dx) g = static_cast<T>(static_cast<double>(g) * scale);
    nn::embedding_backward(ids.data(), dx.data(), embedding.grad.data(), v, static_cast<T*>(nullptr),
                           static_cast<int64_t>(ids.size()), e);
  };
  embedding_backward(b.target_in, dout, c.target_drop);
  // the encoder's final norm and layers, from the memory's gradient
  const T* encoded = encoder.empty() ? c.source_x.data() : c.encoder_out.back().data();
  std::vector<T> dsource(dmemory.size(), T(0));
  nn::layer_norm_backward(dmemory.data(), encoded, encoder_norm_weight.value.data(), c.memory_mean.data(),
                          c.memory_rstd.data(), dsource.data(), encoder_norm_weight.grad.data(),
                          encoder_norm_bias.grad.data(), sources, e);
  nn::attention_mask_spec padding;
  padding.lengths = b.source_lengths;
  for (size_t i = encoder.size(); i-- > 0;) {
    const T* in = i == 0 ? c.source_x.data() : c.encoder_out[i - 1].data();
    din.assign(dsource.size(), T(0));
    nn::encoder_block_backward(dsource.data(), in, encoder[i].weights(), c.encoder[i], din.data(), encoder[i].grads(),
                               encoder_shape(b), padding);
    std::swap(dsource, din);
  }
  embedding_backward(b.source, dsource, c.source_drop);
}

template class translator<float>;
template class translator<double>;

translator_steps::translator_steps(const translator<float>& model)
    : model_(&model),
      output_(model.embedding.value.data(), nullptr, model.shape().vocabulary, model.shape().width) {
  for (const nn::decoder_parameters<float>& block : model.decoder)
    blocks_.emplace_back(block, model.shape().width, model.shape().feedforward);
}

translator_decoder::translator_decoder(const translator_steps& weights, std::span<const int64_t> source,
                                       int64_t capacity)
    : weights_(&weights), source_length_(static_cast<int64_t>(source.size())), capacity_(capacity) {
  const translator<float>& model = weights.model();
  const translator_shape& s = model.shape();
  if (source.empty()) throw_usage("nothing to translate (no source pieces)");
  translation_batch b;
  b.size = 1;
  b.source_length = source_length_;
  b.source.assign(source.begin(), source.end());
  b.source_lengths = {source_length_};
  translator_cache<float> c;
  model.encode(b, c, 0);
  auto cross = std::make_shared<std::vector<nn::cross_keys_values>>();
  for (const nn::decoder_parameters<float>& block : model.decoder)
    cross->push_back(nn::cross_keys_values_forward(c.memory.data(), block, source_length_, s.width, s.heads));
  cross_ = std::move(cross);
  self_kv_.resize(model.decoder.size());
  for (nn::self_attention_kv& kv : self_kv_) kv.reset(s.width, capacity_);
}

translator_decoder::translator_decoder(const translator_decoder& other)
    : weights_(other.weights_),
      source_length_(other.source_length_),
      capacity_(other.capacity_),
      length_(other.length_),
      cross_(other.cross_),
      self_kv_(other.self_kv_) {}

std::span<const float> translator_decoder::step(int64_t id) {
  translator_decoder* self = this;
  step_together({&self, 1}, {&id, 1});
  return logits_;
}

void translator_decoder::step_together(std::span<translator_decoder* const> decoders, std::span<const int64_t> ids) {
  const auto rows = static_cast<int64_t>(decoders.size());
  if (rows == 0) return;
  const translator_decoder& first = *decoders.front();
  const bool together = std::all_of(decoders.begin(), decoders.end(), [&](const translator_decoder* d) {
    return d->weights_ == first.weights_ && d->length_ == first.length_;
  });
  if (!together) {
    for (int64_t k = 0; k < rows; ++k) decoders[static_cast<size_t>(k)]->step(ids[static_cast<size_t>(k)]);
    return;
  }
  const translator_steps& w = *first.weights_;
  const translator<float>& m = w.model();
  const translator_shape& s = m.shape();
  const int64_t e = s.width, t = first.length_;
  for (const translator_decoder* d : decoders)
    if (t >= d->capacity_) throw_usage(fmt::format("a translation longer than {} pieces", d->capacity_));
  // The rows' embeddings + position (as forward's embed), then every layer over all of them.
  thread_local std::vector<float> x, normed, mean, rstd;
  thread_local nn::decoder_block_row_scratch block;
  x.resize(static_cast<size_t>(rows * e));
  const double scale = std::sqrt(static_cast<double>(e));
  thread_local std::vector<double> position;  // every row is at t
  position.resize(static_cast<size_t>(e));
  for (int64_t j = 0; j < e; ++j) position[static_cast<size_t>(j)] = sinusoid(t, j, e);
  for (int64_t k = 0; k < rows; ++k) {
    const int64_t id = ids[static_cast<size_t>(k)];
    if (id < 0 || id >= s.vocabulary) throw_usage(fmt::format("piece {} is not among the model's {}", id, s.vocabulary));
    for (int64_t j = 0; j < e; ++j)
      x[static_cast<size_t>(k * e + j)] =
          static_cast<float>(static_cast<double>(m.embedding.value[static_cast<size_t>(id * e + j)]) * scale +
                             position[static_cast<size_t>(j)]);
  }
  const nn::decoder_block_shape shape{.batch = 1, .target = 1, .source = 0 /* each row its own */, .width = e,
                                      .heads = s.heads, .feedforward = s.feedforward};
  std::vector<nn::self_attention_kv*> kv(static_cast<size_t>(rows));
  std::vector<const nn::cross_keys_values*> cross(static_cast<size_t>(rows));
  for (size_t i = 0; i < m.decoder.size(); ++i) {
    for (size_t k = 0; k < static_cast<size_t>(rows); ++k) {
      kv[k] = &decoders[k]->self_kv_[i];
      cross[k] = &(*decoders[k]->cross_)[i];
    }
    nn::decoder_block_rows_forward(x.data(), w.blocks()[i], kv, t, cross, shape, block);
  }
  normed.resize(x.size());
  mean.resize(static_cast<size_t>(rows));
  rstd.resize(static_cast<size_t>(rows));
  nn::layer_norm_forward(x.data(), m.decoder_norm_weight.value.data(), m.decoder_norm_bias.value.data(),
                         normed.data(), mean.data(), rstd.data(), rows, e);
  // Uninitialised: the product writes every element.
  const std::shared_ptr<float[]> logits =
      std::make_shared_for_overwrite<float[]>(static_cast<size_t>(rows * s.vocabulary));
  w.output().apply(normed.data(), rows, logits.get());
  for (int64_t k = 0; k < rows; ++k) {
    translator_decoder& d = *decoders[static_cast<size_t>(k)];
    d.logits_block_ = logits;
    d.logits_ = {logits.get() + k * s.vocabulary, static_cast<size_t>(s.vocabulary)};
    ++d.length_;
  }
}

}  // namespace attn::models
