// A trained translator (issue #54): subword pieces (SentencePiece, learned jointly from both
// sides of the training pairs) → a pre-norm Transformer encoder–decoder with cross-attention
// (src/models/translator.hpp) → beam search with a length penalty. Trained by
// attn::train_translation_model (attn train --task translate); saved as safetensors whose
// tensors carry nn.Transformer's names and whose "__metadata__" holds the shape, the training
// record and the piece model itself (base64), so a model is one file.
//
//   auto model = attn::translation_model::load("de-en.safetensors");
//   attn::translation t = model.translate("Ein Mann fährt Fahrrad.", {.beam = 5});
//   // t.best().text == "A man is riding a bike."
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "attn/tensor.hpp"
#include "attn/train.hpp"

namespace attn {

// The "format" a translation model file's metadata names.
inline constexpr const char* translation_model_format = "attn-translator/1";

struct translation_config {
  int64_t vocabulary = 0;  // joint pieces, the four specials (<pad> <unk> <s> </s>) included
  int64_t width = 0;       // E
  int64_t heads = 1;
  int64_t encoder_layers = 0, decoder_layers = 0;
  int64_t feedforward = 0;
  double dropout = 0;          // used while training only (the embeddings')
  double residual_dropout = 0; // used while training only (each sub-layer's output)
  double label_smoothing = 0;  // used while training only
  int64_t max_length = 0;      // the longest side (pieces, </s> included) training kept
};

// How translate searches (Marian's, CTranslate2's and fairseq's options).
struct translation_options {
  int64_t beam = 5;              // 1: greedy
  double length_penalty = 1.0;   // α: hypotheses ranked by log-probability / length^α
  int64_t n_best = 1;            // hypotheses returned, 1 … beam
  // Target pieces made at most (the end token not counted); 0: 2 × the source's pieces + 10.
  int64_t max_length = 0;
  bool alignment = false;        // fill each hypothesis's alignment (cross-attention)
};

struct translation_hypothesis {
  std::string text;                 // detokenized
  std::vector<std::string> pieces;  // made (the end token not included)
  double score = 0;                 // log_probability / length^α
  double log_probability = 0;       // natural log, the end token's included when ended
  bool ended = false;               // chose the end token (else: stopped at max_length)
  // With translation_options::alignment: Moses "i-j" pairs, source word i → target word j (words:
  // the whitespace-separated words of the source and of text), each target word linked to the
  // source word its pieces attended to most (the last decoder layer's cross-attention, averaged
  // over heads and the word's pieces).
  std::vector<std::pair<int64_t, int64_t>> alignment;
};

struct translation {
  std::vector<std::string> source_pieces;  // the source as the model read it (</s> not included)
  std::vector<translation_hypothesis> hypotheses;  // best first (n_best of them, or fewer)
  const translation_hypothesis& best() const { return hypotheses.front(); }
};

// What a translator attends to while it writes a translation: for every layer, [H, rows, columns]
// weights of the encoder's self-attention [H, S, S] (source × source), the decoder's causal
// self-attention [H, T, T] (row t: the step that writes target[t], reading read[0 … t]) and the
// cross-attention [H, T, S] (target pieces × source pieces: which source pieces each written piece
// attended to).
struct translation_attention {
  std::vector<std::string> source;  // the source's pieces and </s>
  // Moses pairs as translation_hypothesis::alignment gives them, from the last layer's cross below.
  std::vector<std::pair<int64_t, int64_t>> alignment;
  std::vector<std::string> target;  // the pieces written: y₁ … y_n and </s>
  std::vector<std::string> read;    // what the decoder read at each step: <s> y₁ … y_n
  std::vector<tensor> encoder, decoder, cross;  // one per layer
  std::string text;                             // the translation (detokenized)
};

// Translations scored against references, line by line, as sacreBLEU 2's defaults score them:
// cased BLEU with the 13a tokenizer and exponential smoothing, and chrF2 (attn's own code:
// src/text/bleu.hpp, src/text/chrf.hpp). A usage error when the counts differ.
struct translation_scores {
  double bleu = 0, chrf = 0;
  std::vector<double> precisions;  // BLEU's 1- to 4-gram, in percent
  double brevity_penalty = 0;
  int64_t hypothesis_length = 0, reference_length = 0;  // BLEU's token counts
  std::string bleu_signature, chrf_signature;
};
translation_scores score_translations(const std::vector<std::string>& hypotheses,
                                      const std::vector<std::string>& references);

// attn eval for a translator: the corpus scores of its translations against the references and
// the model's mean cross-entropy per reference piece (no label smoothing).
struct translation_evaluation {
  translation_scores scores;  // BLEU and chrF
  double loss = 0;
  int64_t pairs = 0;    // pairs translated and scored
  int64_t skipped = 0;  // pairs left out of the loss: a side without pieces (every line counts in the scores)
  std::vector<std::string> translations;  // in the input's order
};

// Sentence pairs as attn train --task translate and attn eval read them: two files aligned by line
// (source, target) or one of source<TAB>target lines (target empty; blank lines skipped, columns
// past the second ignored). Input errors: files of different line counts, a line without a tab,
// text that is not UTF-8 (with its line), no pair at all.
struct sentence_pairs {
  std::vector<std::string> sources, targets;
};
sentence_pairs read_sentence_pairs(const std::string& source, const std::string& target = "");

// Whether the file at path is a translation model (its safetensors header names the format);
// false for anything else, readable or not (the text model's loader then says what is wrong).
bool is_translation_model_file(const std::string& path);

class translation_model {
 public:
  translation_model();
  ~translation_model();
  translation_model(translation_model&&) noexcept;
  translation_model& operator=(translation_model&&) noexcept;

  static translation_model load(const std::string& path);
  // From safetensors bytes; `source` names them in errors (an input error for a file that is not a
  // translation model, or whose piece table or tensors are damaged).
  static translation_model decode(const std::string& bytes, const std::string& source);
  std::string encode() const;
  // encode() to path, replaced whole or not at all.
  void save(const std::string& path) const;

  const translation_config& config() const;
  // The text as subword pieces, as the model reads it (attn tokenize --model).
  std::vector<std::string> pieces(std::string_view text) const;
  std::vector<int32_t> piece_ids(std::string_view text) const;  // the same as ids (</s> not added)
  std::vector<std::string> piece_table() const;  // every id's piece, from 0 (<pad> <unk> <s> </s> first)

  // Beam search (greedy at beam 1): the encoder runs once, the cross-attention's keys and values
  // are projected once, the decoder's self-attention reads a key-value cache. Usage errors for
  // beam < 1, n_best outside 1 … beam, a length penalty outside [-10, 10]. An empty text (no
  // pieces) translates to an empty text.
  translation translate(std::string_view text, const translation_options& options = {}) const;
  // Each text translated (sentences of like length together, on every thread); results in the
  // input order, each the same as translate(text, options) gives.
  std::vector<translation> translate(const std::vector<std::string>& texts,
                                     const translation_options& options = {}) const;
  // The attention inside the model as it writes the best translation of text (beam as given).
  translation_attention attention(std::string_view text, const translation_options& options = {}) const;
  // Translates the sources (in batch), scores them against the references (cased sacreBLEU:
  // 13a tokenizer, exponential smoothing; chrF2) and the loss on the references. Lines aligned
  // by number; an input error when the counts differ.
  translation_evaluation evaluate(const std::vector<std::string>& sources, const std::vector<std::string>& references,
                                  const translation_options& options = {}) const;

  // What the run that made the model scored as it went.
  const std::string& training_record() const;

  struct impl;
  explicit translation_model(std::unique_ptr<impl> p);
  impl& internals() { return *impl_; }
  const impl& internals() const { return *impl_; }

 private:
  std::unique_ptr<impl> impl_;
};

// attn train --task translate: reads the pairs (options.source/target aligned by line, or
// options.data of source<TAB>target lines), holds some out when no validation pairs are given,
// learns options.pieces joint subword pieces, trains the translator in the one training loop
// (epochs or --time, checkpoints, --resume) and returns it with the loop's reports.
struct translation_training {
  translation_model model;
  train_result run;  // the loop's reports (its text model is empty)
  int64_t pairs = 0, valid_pairs = 0;            // trained on, held out
  int64_t too_long = 0, empty = 0;               // training pairs skipped (never cut)
  int64_t valid_too_long = 0, valid_empty = 0;   // held-out pairs skipped
  int64_t source_pieces = 0, target_pieces = 0;  // in the training pairs kept
};
translation_training train_translation_model(const train_options& options, const train_callbacks& callbacks = {});

}  // namespace attn
