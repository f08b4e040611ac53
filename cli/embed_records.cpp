#include "embed_records.hpp"

#include <fmt/format.h>

#include "json_util.hpp"

namespace attn::cli {

std::string embed_text(const embedding& e) {
  std::string out;
  const tensor& c = e.steps.context;
  if (e.tokens.empty()) return out;
  const int64_t d = c.dim(1);
  for (size_t i = 0; i < e.tokens.size(); ++i) {
    out += e.tokens[i];
    for (int64_t j = 0; j < d; ++j)
      out += fmt::format(" {:.6f}", c.data()[static_cast<int64_t>(i) * d + j]);
    out += '\n';
  }
  return out;
}

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
  std::string out;
  if (e.tokens.empty()) return out;
  const tensor& c = e.steps.context;
  const int64_t d = c.dim(1);
  for (size_t i = 0; i < e.tokens.size(); ++i) {
    if (line > 0) out += fmt::format("{},", line);
    out += csv_field(e.tokens[i]);
    // {} is the shortest decimal that reads back as the same float32.
    for (int64_t j = 0; j < d; ++j)
      out += fmt::format(",{}", c.data()[static_cast<int64_t>(i) * d + j]);
    out += '\n';
  }
  return out;
}

}  // namespace attn::cli
