// What a translation_model does with text: beam search over the translator's cached decoder
// (decode/beam_search.hpp, decode/translation_decoding.hpp), many sentences on every thread, the
// attention inside while it writes, word alignments from the cross-attention, and attn eval's
// BLEU, chrF and loss.
#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>

#include "attn/error.hpp"
#include "decode/beam_search.hpp"
#include "decode/translation_decoding.hpp"
#include "text/bleu.hpp"
#include "text/chrf.hpp"
#include "train/translation_model_impl.hpp"
#include "train/translation_pairs.hpp"
#include "train/translation_training.hpp"

namespace attn {

namespace {

using text::subword_pieces;

void check_options(const translation_options& o) {
  if (o.beam < 1) throw_usage(fmt::format("--beam {}: must be 1 or more", o.beam));
  if (o.n_best < 1 || o.n_best > o.beam)
    throw_usage(fmt::format("--n-best {}: must be in [1, --beam {}]", o.n_best, o.beam));
  if (!(o.length_penalty >= -10 && o.length_penalty <= 10))
    throw_usage(fmt::format("--length-penalty {}: must be in [-10, 10]", o.length_penalty));
  if (o.max_length < 0) throw_usage(fmt::format("--max-length {}: must be 0 or more", o.max_length));
}

// The pieces the decoder made as text: SentencePiece joins them and turns ▁ back into spaces.
std::string detokenize(const subword_pieces& pieces, const std::vector<int64_t>& ids) {
  return pieces.decode(std::vector<int32_t>(ids.begin(), ids.end()));
}

// Each piece's word: a piece starting with ▁ (U+2581) starts a word, as SentencePiece marks them.
std::vector<int64_t> word_of_pieces(const std::vector<std::string>& pieces) {
  std::vector<int64_t> words;
  int64_t word = -1;
  for (const std::string& p : pieces) {
    if (word < 0 || p.starts_with("\xe2\x96\x81")) ++word;
    words.push_back(word);
  }
  return words;
}

// Attention weights of one sentence (batch 1) from a layer's cache: softmax over the keys of
// scale·q·k [H, L, S], in double, causal when asked.
tensor attention_weights(const nn::attention_cache<float>& c, int64_t heads, int64_t queries, int64_t keys,
                         int64_t head_dim, bool causal) {
  tensor w({heads, queries, keys});
  const double scale = 1.0 / std::sqrt(static_cast<double>(head_dim));
  std::vector<double> row(static_cast<size_t>(keys));
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t i = 0; i < queries; ++i) {
      const float* q = c.q.data() + (h * queries + i) * head_dim;
      const int64_t seen = causal ? std::min(keys, i + 1) : keys;
      double top = -INFINITY, sum = 0;
      for (int64_t j = 0; j < seen; ++j) {
        const float* k = c.k.data() + (h * keys + j) * head_dim;
        double dot = 0;
        for (int64_t d = 0; d < head_dim; ++d) dot += static_cast<double>(q[d]) * static_cast<double>(k[d]);
        row[static_cast<size_t>(j)] = dot * scale;
        top = std::max(top, row[static_cast<size_t>(j)]);
      }
      for (int64_t j = 0; j < seen; ++j) sum += row[static_cast<size_t>(j)] = std::exp(row[static_cast<size_t>(j)] - top);
      for (int64_t j = 0; j < keys; ++j)
        w.at({h, i, j}) = j < seen ? static_cast<float>(row[static_cast<size_t>(j)] / sum) : 0.0f;
    }
  return w;
}

// The translator run over the source and a made target, teacher-forced (batch 1): the caches
// hold every layer's attention. target: the made pieces, and </s> when the hypothesis ended.
models::translator_cache<float> run_forced(const models::translator<float>& net, const std::vector<int64_t>& source,
                                           const std::vector<int64_t>& target) {
  std::vector<train::encoded_pair> one{{source, target}};
  const int64_t index = 0;
  models::translation_batch b = train::make_translation_batch(one, {&index, 1});
  models::translator_cache<float> cache;
  net.forward(b, cache, 0);
  return cache;
}

// Moses i-j pairs: each target word linked to the source word its pieces attended to most (the
// last decoder layer's cross-attention, averaged over heads and over the target word's pieces;
// a source word's weight is the sum over its pieces). Row t of the cross-attention predicts
// target piece t; the rows and columns past the pieces given (</s>'s) are not read.
std::vector<std::pair<int64_t, int64_t>> align(const tensor& cross, const std::vector<std::string>& source_pieces,
                                               const std::vector<std::string>& target_pieces) {
  const std::vector<int64_t> source_word = word_of_pieces(source_pieces), target_word = word_of_pieces(target_pieces);
  if (source_word.empty() || target_word.empty()) return {};
  const int64_t heads = cross.shape()[0];
  const int64_t source_words = source_word.back() + 1, target_words = target_word.back() + 1;
  std::vector<double> mass(static_cast<size_t>(source_words * target_words), 0.0);
  for (size_t t = 0; t < target_pieces.size(); ++t)
    for (size_t s = 0; s < source_pieces.size(); ++s) {
      double a = 0;
      for (int64_t h = 0; h < heads; ++h) a += cross.at({h, static_cast<int64_t>(t), static_cast<int64_t>(s)});
      mass[static_cast<size_t>(target_word[t] * source_words + source_word[s])] += a;
    }
  std::vector<std::pair<int64_t, int64_t>> links;
  for (int64_t j = 0; j < target_words; ++j) {
    const auto row = mass.begin() + j * source_words;
    links.emplace_back(std::max_element(row, row + source_words) - row, j);
  }
  return links;
}

// The most target pieces a source's translation makes (the end token not counted).
int64_t max_tokens_for(const std::vector<int64_t>& source, const translation_options& options) {
  return options.max_length > 0 ? options.max_length : 2 * static_cast<int64_t>(source.size() - 1) + 10;
}

decode::beam_options beam_options_for(int64_t max_tokens, const translation_options& options) {
  return {.beam = options.beam, .n_best = options.n_best, .length_penalty = options.length_penalty,
          .max_tokens = max_tokens, .end = subword_pieces::end,
          .banned = {.first = subword_pieces::pad, .second = subword_pieces::unknown}};
}

// Sentences searched together on one thread, their beams' rows through each weight at once:
// beam 5 × 16 sentences is 80 rows, so the products read the weights from memory once for all
// of them, while a group of like-length sentences still ends at about the same step (CTranslate2
// and Marian batch their beams the same way).
constexpr size_t sentences_together = 16;

// Beam search for sources of like length together (each its pieces and </s>, more than </s>
// alone), each with its own limit on target pieces; the lists are what each gives alone.
std::vector<std::vector<decode::hypothesis>> search(const models::translator_steps& net,
                                                    const std::vector<const std::vector<int64_t>*>& sources,
                                                    const translation_options& options) {
  const int64_t start = subword_pieces::begin;
  std::vector<std::unique_ptr<decode::translation_decoding>> models;
  std::vector<const decode::autoregressive_model*> model_of;
  std::vector<std::span<const int64_t>> prompts;
  std::vector<decode::beam_options> limits;
  for (const std::vector<int64_t>* source : sources) {
    const int64_t max_tokens = max_tokens_for(*source, options);
    models.push_back(std::make_unique<decode::translation_decoding>(net, *source, max_tokens + 1));
    model_of.push_back(models.back().get());
    prompts.emplace_back(&start, 1);
    limits.push_back(beam_options_for(max_tokens, options));
  }
  if (sources.size() == 1) return {decode::beam_search(*model_of.front(), prompts.front(), limits.front())};
  return decode::beam_search_together(model_of, prompts, limits);
}

// The source's pieces as translation::source_pieces (</s> left out).
translation with_source_pieces(const translation_model::impl& m, const std::vector<int64_t>& source) {
  translation out;
  for (size_t i = 0; i + 1 < source.size(); ++i) out.source_pieces.push_back(m.pieces.piece(static_cast<int32_t>(source[i])));
  return out;
}

// out (its source pieces filled) gets the hypotheses found as text, with their alignments.
void add_hypotheses(const translation_model::impl& m, const std::vector<int64_t>& source,
                    const std::vector<decode::hypothesis>& found, const translation_options& options, translation& out) {
  for (const decode::hypothesis& h : found) {
    translation_hypothesis t;
    t.text = detokenize(m.pieces, h.tokens);
    t.score = h.score;
    t.log_probability = h.log_probability;
    t.ended = h.ended;
    for (int64_t id : h.tokens) t.pieces.push_back(m.pieces.piece(static_cast<int32_t>(id)));
    if (options.alignment && !h.tokens.empty()) {
      std::vector<int64_t> target = h.tokens;
      target.push_back(subword_pieces::end);
      const models::translator_cache<float> cache = run_forced(m.net, source, target);
      const models::translator_shape& s = m.net.shape();
      const tensor cross = attention_weights(cache.decoder.back().cross_attention, s.heads,
                                             static_cast<int64_t>(target.size()), static_cast<int64_t>(source.size()),
                                             s.width / s.heads, false);
      t.alignment = align(cross, out.source_pieces, t.pieces);
    }
    out.hypotheses.push_back(std::move(t));
  }
}

// A source with no pieces (</s> alone) translates to nothing, ended.
void add_empty(translation& out) {
  translation_hypothesis empty;
  empty.ended = true;
  out.hypotheses.push_back(empty);
}

}  // namespace

translation translation_model::translate(std::string_view text, const translation_options& options) const {
  return translate_text(*impl_, text, options);
}

std::vector<translation> translation_model::translate(const std::vector<std::string>& texts,
                                                      const translation_options& options) const {
  return translate_texts(*impl_, texts, options);
}

translation translate_text(const translation_model::impl& m, std::string_view text, const translation_options& options) {
  check_options(options);
  const std::vector<int64_t> source = m.source_ids(text);
  translation out = with_source_pieces(m, source);
  if (source.size() == 1) {  // no pieces: nothing to translate
    add_empty(out);
    return out;
  }
  add_hypotheses(m, source, search(m.steps(), {&source}, options).front(), options, out);
  return out;
}

std::vector<translation> translate_texts(const translation_model::impl& m, const std::vector<std::string>& texts,
                                         const translation_options& options) {
  check_options(options);
  std::vector<std::vector<int64_t>> sources;
  sources.reserve(texts.size());
  for (const std::string& text : texts) sources.push_back(m.source_ids(text));
  std::vector<translation> out(texts.size());
  std::vector<size_t> order;  // the sources with pieces
  for (size_t i = 0; i < texts.size(); ++i) {
    out[i] = with_source_pieces(m, sources[i]);
    if (sources[i].size() == 1)
      add_empty(out[i]);
    else
      order.push_back(i);
  }
  // The longest first, in groups of like length searched together, each thread taking the next
  // group when it is free: the long ones do not finish last.
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return sources[a].size() > sources[b].size(); });
  const auto groups = static_cast<int64_t>((order.size() + sentences_together - 1) / sentences_together);
  std::exception_ptr failed;
  m.steps();  // packed before the threads start
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t g = 0; g < groups; ++g) {
    try {
      const size_t from = static_cast<size_t>(g) * sentences_together;
      const size_t to = std::min(order.size(), from + sentences_together);
      std::vector<const std::vector<int64_t>*> group;
      for (size_t k = from; k < to; ++k) group.push_back(&sources[order[k]]);
      const std::vector<std::vector<decode::hypothesis>> found = search(m.steps(), group, options);
      for (size_t k = from; k < to; ++k) add_hypotheses(m, sources[order[k]], found[k - from], options, out[order[k]]);
    } catch (...) {
#pragma omp critical
      if (!failed) failed = std::current_exception();
    }
  }
  if (failed) std::rethrow_exception(failed);
  return out;
}

translation_attention translation_model::attention(std::string_view text, const translation_options& options) const {
  check_options(options);
  const impl& m = *impl_;
  const std::vector<int64_t> source = m.source_ids(text);
  if (source.size() == 1) throw_usage("nothing to translate: the text has no pieces");
  const decode::hypothesis best = search(m.steps(), {&source},
                                         {.beam = options.beam, .length_penalty = options.length_penalty, .n_best = 1,
                                          .max_length = options.max_length})
                                      .front()
                                      .front();
  std::vector<int64_t> target = best.tokens;
  target.push_back(subword_pieces::end);
  const models::translator_cache<float> cache = run_forced(m.net, source, target);
  const models::translator_shape& s = m.net.shape();
  const int64_t d = s.width / s.heads, sl = static_cast<int64_t>(source.size()), tl = static_cast<int64_t>(target.size());
  translation_attention a;
  a.text = detokenize(m.pieces, best.tokens);
  for (int64_t id : source) a.source.push_back(id == subword_pieces::end ? "</s>" : m.pieces.piece(static_cast<int32_t>(id)));
  a.read.emplace_back("<s>");
  for (int64_t id : best.tokens) {
    a.target.push_back(m.pieces.piece(static_cast<int32_t>(id)));
    a.read.push_back(a.target.back());
  }
  a.target.emplace_back("</s>");
  for (const auto& layer : cache.encoder) a.encoder.push_back(attention_weights(layer.attention, s.heads, sl, sl, d, false));
  for (const auto& layer : cache.decoder) {
    a.decoder.push_back(attention_weights(layer.self_attention, s.heads, tl, tl, d, true));
    a.cross.push_back(attention_weights(layer.cross_attention, s.heads, tl, sl, d, false));
  }
  a.alignment = align(a.cross.back(), {a.source.begin(), a.source.end() - 1}, {a.target.begin(), a.target.end() - 1});
  return a;
}

translation_scores score_translations(const std::vector<std::string>& hypotheses,
                                      const std::vector<std::string>& references) {
  if (hypotheses.size() != references.size())
    throw_usage(fmt::format("{} translations but {} references (aligned by line)", hypotheses.size(), references.size()));
  const text::bleu_score bleu = text::corpus_bleu(hypotheses, references);
  const text::chrf_score chrf = text::corpus_chrf(hypotheses, references);
  return {.bleu = bleu.score, .chrf = chrf.score, .precisions = {bleu.precisions.begin(), bleu.precisions.end()},
          .brevity_penalty = bleu.brevity_penalty, .hypothesis_length = static_cast<int64_t>(bleu.sys_len),
          .reference_length = static_cast<int64_t>(bleu.ref_len), .bleu_signature = bleu.signature,
          .chrf_signature = chrf.signature};
}

translation_evaluation translation_model::evaluate(const std::vector<std::string>& sources,
                                                   const std::vector<std::string>& references,
                                                   const translation_options& options) const {
  if (sources.size() != references.size())
    throw_usage(fmt::format("{} sources but {} references (aligned by line)", sources.size(), references.size()));
  const impl& m = *impl_;
  translation_evaluation e;
  for (translation& t : translate(sources, {.beam = options.beam, .length_penalty = options.length_penalty,
                                            .n_best = 1, .max_length = options.max_length}))
    e.translations.push_back(std::move(t.hypotheses.front().text));
  e.scores = score_translations(e.translations, references);
  // The loss over the pairs with pieces on both sides, at any length (positions are sinusoids).
  std::vector<train::sentence_pair> pairs;
  for (size_t i = 0; i < sources.size(); ++i) pairs.push_back({sources[i], references[i]});
  const train::encoded_pairs encoded = train::encode_pairs(pairs, m.pieces, int64_t{1} << 40);
  e.pairs = static_cast<int64_t>(sources.size());
  e.skipped = encoded.empty;
  e.loss = train::score_pairs(m.net, encoded.pairs, 4096).loss;
  return e;
}

}  // namespace attn
