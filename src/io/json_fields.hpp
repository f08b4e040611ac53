// Reading JSON that came from a file (a model's metadata, a checkpoint's header) as untrusted
// input: each field by name, of the right type, or an input error naming the file and the
// field, in attn's words rather than the JSON library's ("field 'heads' must be an integer,
// got 4.5").
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace attn::io {

class json_fields {
 public:
  // `source`: the file, for messages; `what`: how the fields are named in them ("checkpoint
  // field", "model config field").
  json_fields(std::string source, std::string what) : source_(std::move(source)), what_(std::move(what)) {}

  // Parses text as JSON; an input error when it is not valid JSON (`name` says which text).
  nlohmann::json parse(const std::string& text, const std::string& name) const;

  // The field `name` of object j (a dotted name's last part is the key: "progress.epoch").
  const nlohmann::json& at(const nlohmann::json& j, const std::string& name) const;
  bool has(const nlohmann::json& j, const std::string& name) const;
  int64_t integer(const nlohmann::json& j, const std::string& name) const;
  double number(const nlohmann::json& j, const std::string& name) const;  // finite
  bool boolean(const nlohmann::json& j, const std::string& name) const;
  std::string text(const nlohmann::json& j, const std::string& name) const;
  std::vector<std::string> texts(const nlohmann::json& list, const std::string& name) const;

  // An input error unless lo ≤ value ≤ hi.
  void range(const std::string& name, double value, double lo, double hi) const;

  [[noreturn]] void fail(const std::string& name, const std::string& problem) const;
  const std::string& source() const { return source_; }

 private:
  std::string source_, what_;
};

}  // namespace attn::io
