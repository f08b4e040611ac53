// How `attn embed` writes one text's result: GloVe-style text, JSON, or CSV. Single texts and
// --batch records share these, so a batch record reads like a single run's output; a trained
// model's embeddings (--model) are written the same way, with their own JSON keys.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "attn/embed.hpp"
#include "attn/sentence_vector.hpp"
#include "attn/text_model.hpp"

namespace attn::cli {

// "token v1 … vd" per token (GloVe's format: the output loads again as word vectors).
std::string embed_text(const embedding& e);
std::string embed_text(const contextual_embedding& e);

// {"tokens", "embeddings", "attention", "unknown", "scale", "vectors"}.
nlohmann::json embed_json(const embedding& e, const vectors& vocab);
// {"tokens", "embeddings", "unknown", "model", "dim"}: model is its path, dim its width E (the
// embeddings' row length, given also when a record has no token).
nlohmann::json embed_json(const contextual_embedding& e, const std::string& model, int64_t dim);

// A header "token,d0,…" and one row per token, values in their shortest exact form; with
// `line` > 0 a first column "line" holds it (the --batch form).
std::string embed_csv_header(int64_t dim, bool with_line);
std::string embed_csv_rows(const embedding& e, int64_t line = 0);
std::string embed_csv_rows(const contextual_embedding& e, int64_t line = 0);

// One vector per text instead of a row per token (--pool, --normalize).
struct sentence_choice {
  std::optional<sentence_pool> pool;  // none: the token rows
  bool normalize = false;
  std::vector<float> of(const tensor& rows) const { return pool_sentence(rows, *pool, normalize); }
};

// A sentence vector in each format; an empty vector (a text with no known token) is a blank
// line (text), a row of empty fields (CSV), null (JSON) and a row of NaN (npy).
std::string sentence_text(const std::vector<float>& v);
std::string sentence_csv_header(int64_t dim, bool with_line);
std::string sentence_csv_row(const std::vector<float>& v, int64_t dim, int64_t line = 0);
std::string sentence_npy_row(const std::vector<float>& v, int64_t dim);  // raw float32 bytes
// {"tokens", "embedding", "pool", "normalized", "unknown"}; the caller adds the source's keys.
nlohmann::json sentence_json(const std::vector<std::string>& tokens, const std::vector<std::string>& unknown,
                             const std::vector<float>& v, const sentence_choice& s);

// A CSV field, quoted (RFC 4180) when it holds a comma, quote or line break — "," is a token.
std::string csv_field(const std::string& text);

}  // namespace attn::cli
