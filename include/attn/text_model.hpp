// A trained text model (seed 003's simple language model, generalised): tokens → word
// embeddings (+ learned positions) → multi-head self-attention (the seeds' layer, or stacked
// Transformer encoder layers) → the contextual embeddings pooled (mean, max, or both) → MLP
// (linear → ReLU → linear) → logits over the next words or the labels.
// Trained by attn::train_text_model (attn/train.hpp); saved as safetensors with the weights
// and, in "__metadata__", the configuration and the vocabulary/labels, so a model file is all
// predict and evaluate need.
//
//   auto model = attn::text_model::load("model.safetensors");
//   attn::prediction p = model.predict("not like", 3);   // p.top[0].label == "hate"
//   attn::contextual_embedding e = model.embed("not like");  // e.embeddings [2, E]
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "attn/task_kind.hpp"
#include "attn/tensor.hpp"
#include "attn/vectors.hpp"

namespace attn {

// Where the input embeddings come from.
enum class embedding_source {
  default_vectors,  // the embedded GloVe, frozen; not copied into the model file
  stored,           // a table in the model file (pre-trained, fine-tuned or learned)
};

// How the contextual embeddings of a text become one vector.
enum class pooling {
  mean,      // the seeds' choice: every token counts the same
  max,       // feature by feature, the largest value over the tokens
  mean_max,  // both, side by side (twice the width)
  attention, // a learned query's softmax weights over the tokens (starts as the mean)
};
std::string pooling_name(pooling p);  // "mean", "max", "mean+max", "attention"
pooling parse_pooling(const std::string& name);  // a usage error names the choices

struct text_model_config {
  text_task task = text_task::next_word;
  embedding_source embeddings = embedding_source::default_vectors;
  bool embeddings_trained = false;  // fine-tuned or learned from scratch
  int64_t embed_dim = 0;            // the word vectors' width
  int64_t new_words = 0;            // learned rows: training words the vectors lack, and (the
                                    // default vectors fine-tuned) copies of the training words'
                                    // vectors, which then replace them
  int64_t dim = 0;                  // the attention's width E
  int64_t heads = 1;
  int64_t layers = 0;               // 0: the seeds' attention layer; N: N encoder layers
  int64_t feedforward = 0;          // the encoder layers' feed-forward width
  bool norm_first = false;          // pre-norm encoder layers and a final layer norm
  pooling pool = pooling::mean;
  int64_t hidden = 0;               // the MLP's hidden width
  int64_t max_positions = 0;        // learned positional embeddings (0: none)
  int64_t window = 0;               // tokens per word window before the attention (0: none)
  double dropout = 0;               // used while training only
  // lm and masked-word: the adaptive softmax's cuts over the output words (most frequent
  // first; docs/LM.md); empty: the full softmax.
  std::vector<int64_t> output_cutoffs;
  // lm --pieces: the model reads cased subword pieces (SentencePiece, stored in the model file)
  // instead of lowercased words; their count. 0: words.
  int64_t pieces = 0;
};

// The attention layers a model runs, the range of embed's and heatmap's layer (0 … count − 1):
// the seeds' single layer counts as one.
inline int64_t attention_layers(const text_model_config& c) { return c.layers > 0 ? c.layers : 1; }

struct scored_label {
  std::string label;
  double probability;
};

struct prediction {
  std::vector<scored_label> top;     // best first
  std::vector<std::string> unknown;  // words of the text the model has no embedding for
  int64_t tokens_used = 0;
};

// What the model's attention does with a text: for each head, how much each token (row) attends
// to each token (column). The next-word model is causal: row i sees only tokens 0 … i.
struct attention_map {
  std::vector<std::string> tokens;   // L tokens the model used (known words, the last
                                     // max_positions of them when it has learned positions)
  std::vector<std::string> unknown;  // words of the text the model has no embedding for
  tensor weights;                    // [H, L, L]
};

// What a trained model's attention makes of a text: for each token, the output of the model's
// (last) attention block, before pooling (the vectors the pool combines). The
// next-word model is causal: row t depends on tokens 0 … t only.
struct contextual_embedding {
  std::vector<std::string> tokens;   // the L tokens the model used (known words, the last
                                     // max_positions of them when it has learned positions)
  std::vector<std::string> unknown;  // words of the text the model has no embedding for
  tensor embeddings;                 // [L, E], E = config().dim
};

// How much of a text a model reads (predict, attention, inspect and embed read the same): the
// tokens it would read (the words it knows; a language model: every token, after the end token
// that starts a text) and how many of them, the last ones, its context holds (all when it has
// no learned positions). read < tokens: the text was cut, the first tokens left unread.
struct text_window {
  int64_t tokens = 0;
  int64_t read = 0;
};

// How embed reads each token of a text.
enum class token_reading {
  visible,  // with the token itself in place (the default)
  hidden,   // with the token replaced by the mask: the cloze reading (masked-word models)
};

// Every line of the file counts: a line the model cannot score (a label it does not know, no
// word it knows) is a wrong answer, not a line left out, so accuracy is never flattered.
struct evaluation {
  double accuracy = 0;           // correct / n
  double top5 = 0;               // masked-word: the share of hidden words among the model's first 5
  double loss = 0;               // mean cross-entropy over the scored predictions
  int64_t lines = 0;             // lines read (blank lines are not examples)
  int64_t n = 0;                 // predictions counted: every line (classify), every next word
  int64_t scored = 0;            // of those, the ones the model could score (the loss's)
  int64_t unknown_words = 0;     // words without an embedding
  int64_t skipped = 0;           // n − scored: counted as wrong
  // A language model: every token of the text is predicted (each paragraph's end token too,
  // unknown words as <unk>), in windows of the model's context: n = scored = tokens.
  double perplexity = 0;         // e^loss
  double unknown_share = 0;      // of the tokens, the unknown ones
};

// An evaluation by name, as attn eval prints it and Python's evaluate returns it (one place for
// both): a masked-word model's top1, top5, loss, hidden, scored, every, seed, lines; a language
// model's perplexity, loss, tokens, unknown_share, accuracy, lines; the others' accuracy, loss, n,
// lines, scored. A count (or the masked-word evaluation's every and seed) is `integer`, in `count`.
struct evaluation_field {
  std::string name;
  double value = 0;
  bool integer = false;
  uint64_t count = 0;
};
std::vector<evaluation_field> evaluation_fields(const evaluation& e, text_task task, int64_t every = 7,
                                                uint64_t seed = 0);

// How a language model (--task lm) continues a text.
struct generation_options {
  int64_t max_words = 100;  // tokens to make at most (punctuation counts); the end token stops sooner
  double temperature = 1.0;  // 0: always the most likely token (greedy, deterministic)
  int64_t top_k = 0;         // sample among the k most likely tokens only (0: all)
  double top_p = 1.0;        // … and among the fewest whose probabilities reach p (nucleus)
  uint64_t seed = 0;         // the same seed, prompt and options give the same words
  bool ignore_eos = false;   // never choose the end token: make max_words tokens (llama.cpp's
                             // --ignore-eos; for timing long generations)
  // Beam search instead of sampling (temperature, top_k, top_p and seed then unused): the `beam`
  // most probable continuations are carried together, and the best by log-probability divided
  // by length^length_penalty comes back (length: the tokens made, and the
  // end token when chosen). 0: sample, or greedy at temperature 0 (beam 1 with length_penalty 0
  // is greedy too).
  int64_t beam = 0;
  int64_t n_best = 0;            // with beam: also fill generation::n_best with the best n ≤ beam
  double length_penalty = 1.0;   // α, in [-10, 10]: > 0 favours longer texts, < 0 shorter
};

// One of beam search's finished continuations.
struct generated_text {
  std::vector<std::string> tokens;  // made (the end token not included)
  std::string text;                 // as generation::text
  double score = 0;                 // log_probability / length^length_penalty
  double log_probability = 0;       // natural log, the end token's included when ended
  bool ended = false;
};

struct generation {
  std::vector<std::string> prompt;   // the prompt's tokens as the model read them (<unk> for unknown)
  std::vector<std::string> unknown;  // prompt words outside the vocabulary
  std::vector<std::string> tokens;   // made (the end token not included); empty when streamed
  int64_t made = 0;                  // tokens made (streamed or kept)
  bool ended = false;                // stopped at the end-of-paragraph token
  std::string text;                  // the tokens as readable text (attn/detokenize.hpp); empty
                                     // when streamed
  std::vector<generated_text> n_best;  // beam search with n_best: the best first (the first is
                                       // tokens and text above)
};

struct model_inspection;  // attn/inspection.hpp
struct training_history;  // attn/training_curve.hpp

class text_model {
 public:
  text_model();
  ~text_model();
  text_model(text_model&&) noexcept;
  text_model& operator=(text_model&&) noexcept;

  // The model file at path; "builtin" is the built-in context model (builtin()), "builtin-lm"
  // the built-in language model (builtin_lm()); files of those names are reached as
  // "./builtin" and "./builtin-lm".
  static text_model load(const std::string& path);
  // The built-in context model, embedded in the library: masked-word attention trained on
  // English Wikipedia over the default vectors, for contextual embeddings (embed, neighbors,
  // heatmap, predict).
  static text_model builtin();
  // From safetensors bytes; `source` names them in errors.
  static text_model decode(const std::string& bytes, const std::string& source);
  std::string encode() const;  // safetensors bytes (float32)
  // encode() written to path: first beside it under a temporary name, then moved into place, so
  // an existing file is replaced whole or not at all. An input error names the path.
  void save(const std::string& path) const;

  const text_model_config& config() const;
  const std::vector<std::string>& outputs() const;  // the output words, or the labels
  int64_t input_vocabulary() const;                 // words with an embedding (new words too)

  // The k most likely next words (or labels) for the text. A text with no known word is a
  // usage error.
  prediction predict(std::string_view text, int64_t k) const;
  // The attention weights of every head for the text, as the model computes them when it
  // predicts from it. A text with no known word is a usage error.
  attention_map attention(std::string_view text) const;
  // The same for encoder layer `layer` (0 … layers − 1; the last is attention(text)).
  attention_map attention(std::string_view text, int64_t layer) const;
  // Every layer's heads (q, k, v, weights) and, for lm and masked-word models, the top words
  // each layer's output points to at each token: attn/inspection.hpp. A text with no known
  // word is a usage error. top = 0: no predictions (the heads alone).
  model_inspection inspect(std::string_view text, int64_t top = 5) const;
  // The model's contextual embedding of each token of the text (see contextual_embedding): row
  // t is the last block's output at t, the whole text read in one pass (each token with itself
  // present, as ELMo and BERT give their vectors). A masked-word model (the built-in one) can
  // instead read each place with its word hidden (token_reading::hidden): row t is then the
  // output at t when token t alone is replaced by the mask, what the context says belongs
  // there (one pass per token). A text with no known word is a usage error, and so is the
  // hidden reading of a model that was not trained to fill masks.
  contextual_embedding embed(std::string_view text, token_reading reading = token_reading::visible) const;
  // The same read at encoder layer `layer` (0 … layers − 1; -1: the last, as above) instead of
  // the last: an inner layer's output is the residual stream it hands to the next layer, as it
  // is (Hugging Face's hidden_states[layer + 1]). Out of range: a usage error.
  contextual_embedding embed(std::string_view text, token_reading reading, int64_t layer) const;
  // A masked-word model's readings mapped into the word vectors' space (the vectors its output
  // scores against): [L, embed_dim], comparable with the static vectors by cosine. Other
  // models: a usage error.
  tensor embed_as_words(std::string_view text, token_reading reading = token_reading::visible) const;
  // A masked-word model's k likeliest output words at each token's place, as its output layer
  // reads the rows embed(text, reading) gives: visible, what the model takes the word there to
  // be in its context (BERT's masked-LM head on an unmasked token); hidden, what the context says
  // belongs there. [L] lists, best first, probabilities over all the output words. Other
  // models: a usage error.
  std::vector<std::vector<scored_label>> read_as_words(std::string_view text, int64_t k,
                                                       token_reading reading = token_reading::visible) const;
  // Every input word run alone through the model (a one-token text, at position 0): row i is
  // embed(word i).embeddings, [input_vocabulary(), E], for nearest-neighbour search among
  // contextual vectors. Words in input order; the source is "<values>".
  vectors embed_vocabulary() const;
  // The model's own embedding rows, one per input word, as vectors ([input words, embed_dim]):
  // the space its tied output scores in and embed_as_words maps into (the default GloVe rows
  // for a model over them; learned rows for --learn-embeddings). Words in input order (a
  // default word that a learned row replaces: once, at its learned row); the source is "<values>".
  vectors word_rows() const;
  // How much of the text the model reads (see text_window). A text with no known word is a
  // usage error, as for predict.
  text_window window(std::string_view text) const;
  // Whether the model has an embedding for the token (as tokens() gives it).
  bool knows(std::string_view token) const;
  // The tokens the model cuts a text into: attn::tokenize's words, or (config().pieces) its
  // subword pieces.
  std::vector<std::string> tokens(std::string_view text) const;
  // Accuracy and mean cross-entropy over a data file in the task's format. A masked-word
  // model reads plain text and hides every hide_every-th word (the offset drawn from seed):
  // the share it fills, top-1 and top-5 (train/masked_evaluate.hpp).
  evaluation evaluate(const std::string& path, int64_t hide_every = 7, uint64_t seed = 0) const;

  // A language model continues the prompt (or, empty, starts a paragraph) one token at a time
  // with a key-value cache (nn/causal_decoder.hpp). The unknown token is never chosen. Past the
  // model's context, the cache restarts from the latest half of it (learned positions cannot
  // slide). on_text, when given, receives each token's text as it is made, and then tokens
  // and text are not kept (a stream of any length runs in the memory of its context). The
  // options are checked before on_text is first called. With options.beam, the search ends
  // before on_text receives the best continuation's pieces (src/decode/beam_search.hpp).
  // Other tasks: a usage error.
  generation generate(std::string_view prompt, const generation_options& options,
                      const std::function<void(const std::string&)>& on_text = {}) const;
  // The built-in language model: --task lm trained on English Wikipedia (data/NOTICE.md).
  static text_model builtin_lm();

  // What the run that made the model scored as it went (empty for files made before attn kept
  // it): each epoch's losses and held-out score, and a corpus run's every --eval-steps.
  training_history history() const;

  struct impl;
  explicit text_model(std::unique_ptr<impl> p);
  impl& internals() { return *impl_; }
  const impl& internals() const { return *impl_; }

 private:
  std::unique_ptr<impl> impl_;
};

}  // namespace attn
