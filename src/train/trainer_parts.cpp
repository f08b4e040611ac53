// The shared parts of the trainers (see trainer_parts.hpp).
#include "train/trainer_parts.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>
#include <nlohmann/json.hpp>

#include "attn/error.hpp"
#include "attn/train_option_table.hpp"

namespace attn::train {

namespace {

void fill_uniform(std::vector<float>& v, train::rng& r, double bound) {
  for (float& x : v) x = static_cast<float>(r.uniform(-bound, bound));
}

void initialise_attention(nn::attention_parameters<float>& a, int64_t in, int64_t e,
                          train::rng& r) {
  const double xavier_in = std::sqrt(6.0 / static_cast<double>(in + e));
  const double xavier_out = std::sqrt(6.0 / static_cast<double>(2 * e));
  fill_uniform(a.wq.value, r, xavier_in);
  fill_uniform(a.wk.value, r, xavier_in);
  fill_uniform(a.wv.value, r, xavier_in);
  fill_uniform(a.wo.value, r, xavier_out);
}

// lm: the vocabulary's rows (the table's, then new words' when the vectors are frozen) start
// from the word vectors where a word has one (another word's at
// N(0, σ²), σ the vectors' root mean square), or all at N(0, 1/Ein) when learned from scratch:
// small rows, as GPT-2's N(0, 0.02²), since the same rows score the output.
void initialise_lm_rows(models::network<float>& net, const train_options& o, const word_index& words,
                        train::rng& r) {
  const nn::network_shape& s = net.shape();
  double rms = 1.0 / std::sqrt(static_cast<double>(s.embed));
  if (o.word_vectors != nullptr) {
    double squares = 0;
    for (int64_t i = 0; i < o.word_vectors->size(); ++i)
      for (float x : o.word_vectors->vector(i)) squares += static_cast<double>(x) * x;
    rms = std::sqrt(squares / static_cast<double>(std::max<int64_t>(1, o.word_vectors->size() * s.embed)));
  }
  for (int64_t i = 0; i < s.vocabulary + s.new_words; ++i) {  // the table, then learned rows
    float* row = i < s.vocabulary ? net.trunk().embedding.value.data() + i * s.embed
                                  : net.trunk().new_words.value.data() + (i - s.vocabulary) * s.embed;
    const auto known = o.word_vectors != nullptr ? o.word_vectors->find(words.words()[static_cast<size_t>(i)])
                                                 : std::nullopt;
    if (known) {
      auto v = o.word_vectors->vector(*known);
      std::copy(v.begin(), v.end(), row);
    } else {
      for (int64_t j = 0; j < s.embed; ++j) row[j] = static_cast<float>(rms * r.normal());
    }
  }
}

}  // namespace

void check_options(const train_options& o) {
  if (o.data.empty()) throw_usage("no training data (--data FILE)");
  // Every option's range, as attn train's flags and attn.train's keywords hold them.
  check_option_ranges(o, option_spelling::cli);
  // Stated limits, so an impossible size is a usage error before anything is allocated rather
  // than "out of memory" half-way: widths up to 4096 (a 50,000-word table of 4096-wide rows is
  // 0.8 GB, four times that with gradients and AdamW's moments), at most 64 layers and as many
  // heads as the width allows.
  constexpr int64_t max_width = 4096, max_layers = 64;
  for (auto [name, value] : {std::pair{"--dim", o.dim}, std::pair{"--hidden", o.hidden},
                             std::pair{"--feedforward", o.feedforward},
                             std::pair{"--learn-embeddings", o.learn_embeddings}})
    if (value > max_width)
      throw_usage(fmt::format("{} {} is past attn's limit of {}", name, value, max_width));
  if (o.layers > max_layers)
    throw_usage(fmt::format("--layers {} is past attn's limit of {}", o.layers, max_layers));
  if (o.heads > max_width)
    throw_usage(fmt::format("--heads {} is past attn's limit of {}", o.heads, max_width));
  if ((o.word_vectors == nullptr) == (o.learn_embeddings <= 0))
    throw_usage("give word vectors or --learn-embeddings DIM, not both");
  if (!(o.valid_share > 0 && o.valid_share < 1))
    throw_usage(fmt::format("the validation share must be in (0, 1), got {}", o.valid_share));
}

bool uses_default_vectors(const train_options& o) {
  return o.word_vectors != nullptr && o.word_vectors->source() == "<default>";
}

// PyTorch's initialisations: xavier-uniform attention projections with zero biases, nn.Linear's
// U(±1/√fan_in) for the feed-forward parts and the MLP head, layer norms at γ = 1, β = 0, N(0, 1)
// learned embeddings, zero positions. A new word's row starts at N(0, σ²) with σ the pre-trained
// table's root mean square, so it looks like any other word to the attention.
void initialise(models::network<float>& net, const train_options& o, const word_index& inputs,
                train::rng& r) {
  const nn::network_shape& s = net.shape();
  if (kind_of(o.task).autoregressive) {  // the language model learns its own table
    initialise_lm_rows(net, o, inputs, r);
  } else if (o.word_vectors != nullptr) {
    double squares = 0;
    for (int64_t i = 0; i < s.vocabulary; ++i) {
      auto row = o.word_vectors->vector(*o.word_vectors->find(inputs.words()[static_cast<size_t>(i)]));
      std::copy(row.begin(), row.end(), net.trunk().embedding.value.begin() + i * s.embed);
      for (float x : row) squares += static_cast<double>(x) * x;
    }
    const double rms = s.vocabulary > 0 ? std::sqrt(squares / static_cast<double>(s.vocabulary * s.embed)) : 1.0;
    // Learned rows: a copy of the word's vector to fine-tune, or a new word's random start.
    for (int64_t i = 0; i < s.new_words; ++i) {
      const std::string& w = inputs.words()[static_cast<size_t>(s.vocabulary + i)];
      float* row = net.trunk().new_words.value.data() + i * s.embed;
      if (auto known = o.word_vectors->find(w)) {
        auto v = o.word_vectors->vector(*known);
        std::copy(v.begin(), v.end(), row);
      } else {
        for (int64_t j = 0; j < s.embed; ++j) row[j] = static_cast<float>(rms * r.normal());
      }
    }
  } else {
    for (float& x : net.trunk().embedding.value) x = static_cast<float>(r.normal());
  }
  // The word window as PyTorch's Conv1d starts: U(±1/√fan_in), fan_in = window · Ein.
  if (s.window > 0) {
    const double bound = 1.0 / std::sqrt(static_cast<double>(s.window * s.embed));
    fill_uniform(net.trunk().window_weight.value, r, bound);
    fill_uniform(net.trunk().window_bias.value, r, bound);
  }
  if (s.layers == 0) initialise_attention(net.trunk().attention, s.embed, s.width, r);
  for (nn::encoder_parameters<float>& l : net.trunk().layers) {
    if (kind_of(o.task).autoregressive) {
      // The language model, as PyTorch's nn.TransformerEncoderLayer starts its attention: Q, K and V as one
      // xavier-uniform [3E, E] matrix, out_proj as nn.Linear (U(±1/√E)).
      const double in_proj = std::sqrt(6.0 / static_cast<double>(4 * s.width));
      fill_uniform(l.attention.wq.value, r, in_proj);
      fill_uniform(l.attention.wk.value, r, in_proj);
      fill_uniform(l.attention.wv.value, r, in_proj);
      fill_uniform(l.attention.wo.value, r, 1.0 / std::sqrt(static_cast<double>(s.width)));
    } else {
      initialise_attention(l.attention, s.width, s.width, r);
    }
    std::fill(l.norm1_weight.value.begin(), l.norm1_weight.value.end(), 1.0f);
    std::fill(l.norm2_weight.value.begin(), l.norm2_weight.value.end(), 1.0f);
    const double in1 = 1.0 / std::sqrt(static_cast<double>(s.width));
    const double in2 = 1.0 / std::sqrt(static_cast<double>(s.feedforward));
    fill_uniform(l.linear1_weight.value, r, in1);
    fill_uniform(l.linear1_bias.value, r, in1);
    fill_uniform(l.linear2_weight.value, r, in2);
    fill_uniform(l.linear2_bias.value, r, in2);
  }
  std::fill(net.trunk().final_norm_weight.value.begin(), net.trunk().final_norm_weight.value.end(), 1.0f);
  const double head1 = 1.0 / std::sqrt(static_cast<double>(s.pooled()));
  const double head2 = 1.0 / std::sqrt(static_cast<double>(s.hidden));
  if (s.tied_output) {
    fill_uniform(net.output().transform_weight.value, r, head1);
    fill_uniform(net.output().transform_bias.value, r, head1);
    return;  // the bias starts at 0: every word's score is then its row's fit to the context
  }
  fill_uniform(net.head().w1.value, r, head1);
  fill_uniform(net.head().b1.value, r, head1);
  fill_uniform(net.head().w2.value, r, head2);
  fill_uniform(net.head().b2.value, r, head2);
}

text_model_config model_config(const train_options& o) {
  text_model_config c;
  c.task = o.task;
  c.embeddings = uses_default_vectors(o) ? embedding_source::default_vectors : embedding_source::stored;
  c.embeddings_trained = o.word_vectors == nullptr || o.finetune_embeddings;
  c.embed_dim = o.word_vectors != nullptr ? o.word_vectors->dim() : o.learn_embeddings;
  c.dim = o.dim > 0 ? o.dim : c.embed_dim;
  c.heads = o.heads;
  if (c.dim % c.heads != 0)
    throw_usage(fmt::format("--heads {} does not divide the attention width {}{}", c.heads, c.dim,
                            o.dim > 0 ? "" : " (the embedding width; choose --dim)"));
  c.layers = o.layers;
  if (c.layers > 0 && c.dim != c.embed_dim)
    throw_usage(fmt::format("--layers {} adds residual connections, which need --dim equal to "
                            "the embedding width {} (got {})", c.layers, c.embed_dim, c.dim));
  c.feedforward = c.layers > 0 ? (o.feedforward > 0 ? o.feedforward : 2 * c.dim) : 0;
  if (o.norm_first && c.layers == 0)
    throw_usage("--norm-first arranges encoder layers: give --layers N too");
  c.norm_first = o.norm_first;
  c.pool = o.pool;
  c.hidden = o.hidden > 0 ? o.hidden : c.dim;
  c.dropout = o.dropout;
  c.window = o.window >= 0 ? o.window : kind_of(o.task).default_window;
  return c;
}

int64_t add_learned_rows(const train_options& o,
                         const std::vector<std::pair<std::string, int64_t>>& counts, word_index& words) {
  const bool tune = uses_default_vectors(o) && o.finetune_embeddings;
  int64_t tuned = 0;
  for (const auto& [w, n] : counts) {
    const bool known = o.word_vectors->find(w).has_value();
    if (!known && o.min_count > 0 && n >= o.min_count) {
      words.add(w);
    } else if (known && tune) {
      words.add_row(w);
      ++tuned;
    }
  }
  return tuned;
}

std::string training_record(const train_options& o, int64_t epochs) {
  nlohmann::json j = {{"data", o.data}, {"valid", o.valid}, {"epochs", epochs}, {"lr", o.lr},
                      {"batch", o.batch}, {"seed", o.seed}, {"weight_decay", o.weight_decay},
                      {"clip", o.clip}, {"warmup", o.warmup}, {"dropout", o.dropout},
                      {"min_count", o.min_count}, {"patience", o.patience},
                      {"vectors", o.word_vectors != nullptr ? o.word_vectors->source() : ""}};
  if (kind_of(o.task).autoregressive) {
    j["vocab"] = o.vocab;
    j["context"] = o.context;
    j["max_tokens"] = o.max_tokens;
    j["time"] = o.time_limit;
    j["layers"] = o.layers;
  }
  if (kind_of(o.task).hides_words) {
    j["mask_share"] = o.mask_share;
    if (o.time_limit > 0) j["time"] = o.time_limit;  // absent before masked-word took --time
    j["max_length"] = o.max_length;
    j["max_outputs"] = o.max_outputs;
    if (o.group_by_length) j["group_by_length"] = true;  // absent: off, as before it existed
    if (o.pack_sentences) j["pack_sentences"] = true;    // absent: off, as before it existed
    if (o.drop_final_stop > 0) j["drop_final_stop"] = o.drop_final_stop;  // absent: 0, as before it existed
    if (o.max_tokens > 0) j["max_tokens"] = o.max_tokens;  // absent: no token budget
  }
  if (o.dtype == train_dtype::bf16) j["dtype"] = "bf16";  // absent: float32, as before it existed
  // The gradient is summed shard by shard: another number of shards gives other bits.
  if (o.shards > 1) j["shards"] = o.shards;  // absent: one, as before it was recorded
  if (!o.adaptive_softmax.empty()) j["adaptive_softmax"] = o.adaptive_softmax;  // absent: full softmax
  // Paths may hold any bytes; the record is for people, so invalid UTF-8 shows as U+FFFD.
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

namespace {
[[noreturn]] void diverged(const train_options& o, int64_t step) {
  throw_input(o.data.empty() ? o.source : o.data, fmt::format("training diverged (the loss is no longer finite; a learning rate "
                                  "below {:g} may train)", o.lr),
              fmt::format("step {}", step));
}
}  // namespace

void check_finite_loss(const train_options& o, double loss_sum, int64_t step) {
  if (!std::isfinite(loss_sum)) diverged(o, step);
}

void check_finite_weights(const train_options& o, const std::vector<nn::parameter<float>*>& params, int64_t step) {
  for (const nn::parameter<float>* p : params)
    for (float v : p->value)
      if (!std::isfinite(v)) diverged(o, step);
}

bool better(const train::scored_examples& a, const train::scored_examples& b) {
  return a.accuracy > b.accuracy || (a.accuracy == b.accuracy && a.loss < b.loss);
}

std::vector<std::vector<float>> snapshot(const std::vector<nn::parameter<float>*>& params) {
  std::vector<std::vector<float>> values;
  for (const nn::parameter<float>* p : params)
    values.push_back(p->trainable ? p->value : std::vector<float>{});
  return values;
}

void restore(const std::vector<nn::parameter<float>*>& params,
             std::vector<std::vector<float>>& values) {
  for (size_t i = 0; i < params.size(); ++i)
    if (params[i]->trainable) params[i]->value = std::move(values[i]);
}

}  // namespace attn::train
