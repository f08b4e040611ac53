#include "io/json_fields.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "attn/error.hpp"

namespace attn::io {

namespace {
// A value as a message shows it: short.
std::string shown(const nlohmann::json& v) {
  std::string s = v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return s.size() <= 40 ? s : s.substr(0, 40) + "…";
}
}  // namespace

void json_fields::fail(const std::string& name, const std::string& problem) const {
  throw_input(source_, fmt::format("{} '{}' {}", what_, name, problem));
}

nlohmann::json json_fields::parse(const std::string& text, const std::string& name) const {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    // Where it broke, with the text around it: a NaN written by a JSON library that allows it
    // shows next to its key.
    const size_t at = std::min(text.size(), e.byte > 0 ? static_cast<size_t>(e.byte - 1) : size_t{0});
    const size_t from = at > 24 ? at - 24 : 0;
    fail(name, fmt::format("is not valid JSON (at byte {}, near '{}')", at, text.substr(from, at - from + 8)));
  } catch (const nlohmann::json::exception&) {
    fail(name, "is not valid JSON");
  }
}

bool json_fields::has(const nlohmann::json& j, const std::string& name) const {
  return j.is_object() && j.contains(name.substr(name.rfind('.') + 1));
}

const nlohmann::json& json_fields::at(const nlohmann::json& j, const std::string& name) const {
  if (!has(j, name)) fail(name, "is missing");
  return j[name.substr(name.rfind('.') + 1)];
}

int64_t json_fields::integer(const nlohmann::json& j, const std::string& name) const {
  const nlohmann::json& v = at(j, name);
  if (!v.is_number_integer() ||
      (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)))
    fail(name, fmt::format("must be an integer, got {}", shown(v)));
  return v.get<int64_t>();
}

double json_fields::number(const nlohmann::json& j, const std::string& name) const {
  const nlohmann::json& v = at(j, name);
  if (!v.is_number() || !std::isfinite(v.get<double>()))
    fail(name, fmt::format("must be a finite number, got {}", shown(v)));
  return v.get<double>();
}

bool json_fields::boolean(const nlohmann::json& j, const std::string& name) const {
  const nlohmann::json& v = at(j, name);
  if (!v.is_boolean()) fail(name, fmt::format("must be true or false, got {}", shown(v)));
  return v.get<bool>();
}

std::string json_fields::text(const nlohmann::json& j, const std::string& name) const {
  const nlohmann::json& v = at(j, name);
  if (!v.is_string()) fail(name, fmt::format("must be a string, got {}", shown(v)));
  return v.get<std::string>();
}

std::vector<std::string> json_fields::texts(const nlohmann::json& list, const std::string& name) const {
  if (!list.is_array()) fail(name, "must be a list of strings");
  std::vector<std::string> out;
  out.reserve(list.size());
  for (const nlohmann::json& v : list) {
    if (!v.is_string()) fail(name, fmt::format("must be a list of strings, holds {}", shown(v)));
    out.push_back(v.get<std::string>());
  }
  return out;
}

void json_fields::range(const std::string& name, double value, double lo, double hi) const {
  if (!(value >= lo && value <= hi))
    fail(name, fmt::format("is {}, outside [{}, {}]", value, lo, hi));
}

}  // namespace attn::io
