#include "embed_records.hpp"

#include <fmt/format.h>

#include <cstring>
#include <limits>

#include "json_util.hpp"

namespace attn::cli {

namespace {

// tokens and their rows [N, d], in each format (both kinds of embedding share these).
std::string rows_text(const std::vector<std::string>& tokens, const tensor& rows) {
  std::string out;
  if (tokens.empty()) return out;
  const int64_t d = rows.dim(1);
  for (size_t i = 0; i < tokens.size(); ++i) {
    out += tokens[i];
    for (int64_t j = 0; j < d; ++j)
      out += fmt::format(" {:.6f}", rows.data()[static_cast<int64_t>(i) * d + j]);
    out += '\n';
  }
  return out;
}

std::string rows_csv(const std::vector<std::string>& tokens, const tensor& rows, int64_t line) {
  std::string out;
  if (tokens.empty()) return out;
  const int64_t d = rows.dim(1);
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (line > 0) out += fmt::format("{},", line);
    out += csv_field(tokens[i]);
    // {} is the shortest decimal that reads back as the same float32.
    for (int64_t j = 0; j < d; ++j)
      out += fmt::format(",{}", rows.data()[static_cast<int64_t>(i) * d + j]);
    out += '\n';
  }
  return out;
}

}  // namespace

std::string embed_text(const embedding& e) { return rows_text(e.tokens, e.steps.context); }

std::string embed_text(const contextual_embedding& e) { return rows_text(e.tokens, e.embeddings); }

nlohmann::json embed_json(const embedding& e, const vectors& vocab) {
  nlohmann::json j;
  j["tokens"] = e.tokens;
  j["embeddings"] = e.tokens.empty() ? nlohmann::json::array() : json_matrix(e.steps.context);
  j["attention"] = e.tokens.empty() ? nlohmann::json::array() : json_matrix(e.steps.weights);
  j["unknown"] = e.unknown;
  j["scale"] = e.steps.scale;
  j["vectors"] = vocab.source();
  return j;
}

nlohmann::json embed_json(const contextual_embedding& e, const std::string& model, int64_t dim) {
  nlohmann::json j;
  j["tokens"] = e.tokens;
  j["embeddings"] = e.tokens.empty() ? nlohmann::json::array() : json_matrix(e.embeddings);
  j["unknown"] = e.unknown;
  j["model"] = model;
  j["dim"] = dim;
  return j;
}

std::string sentence_text(const std::vector<float>& v) {
  std::string out;
  for (size_t j = 0; j < v.size(); ++j) {
    if (j > 0) out += ' ';
    out += fmt::format("{:.6f}", v[j]);
  }
  return out + "\n";
}

std::string sentence_csv_header(int64_t dim, bool with_line) {
  std::string out = with_line ? "line" : "";
  for (int64_t j = 0; j < dim; ++j) {
    if (j > 0 || with_line) out += ',';
    out += fmt::format("d{}", j);
  }
  return out + "\n";
}

std::string sentence_csv_row(const std::vector<float>& v, int64_t dim, int64_t line) {
  std::string out = line > 0 ? fmt::format("{}", line) : "";
  for (int64_t j = 0; j < dim; ++j) {
    if (j > 0 || line > 0) out += ',';
    if (!v.empty()) out += fmt::format("{}", v[static_cast<size_t>(j)]);
  }
  return out + "\n";
}

std::string sentence_npy_row(const std::vector<float>& v, int64_t dim) {
  std::vector<float> row = v;
  if (row.empty()) row.assign(static_cast<size_t>(dim), std::numeric_limits<float>::quiet_NaN());
  std::string bytes(row.size() * sizeof(float), '\0');
  std::memcpy(bytes.data(), row.data(), bytes.size());
  return bytes;
}

nlohmann::json sentence_json(const std::vector<std::string>& tokens, const std::vector<std::string>& unknown,
                             const std::vector<float>& v, const sentence_choice& s) {
  nlohmann::json j;
  j["tokens"] = tokens;
  nlohmann::json values = nlohmann::json::array();
  for (float x : v) values.push_back(json_float(x));
  j["embedding"] = v.empty() ? nlohmann::json(nullptr) : values;
  j["pool"] = sentence_pool_name(*s.pool);
  j["normalized"] = s.normalize;
  j["unknown"] = unknown;
  return j;
}

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char ch : text) {
    if (ch == '"') out += '"';
    out += ch;
  }
  return out + "\"";
}

std::string embed_csv_header(int64_t dim, bool with_line) {
  std::string out = with_line ? "line,token" : "token";
  for (int64_t j = 0; j < dim; ++j) out += fmt::format(",d{}", j);
  return out + "\n";
}

std::string embed_csv_rows(const embedding& e, int64_t line) {
  return rows_csv(e.tokens, e.steps.context, line);
}

std::string embed_csv_rows(const contextual_embedding& e, int64_t line) {
  return rows_csv(e.tokens, e.embeddings, line);
}

}  // namespace attn::cli
