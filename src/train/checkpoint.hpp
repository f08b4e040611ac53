// A training checkpoint: a JSON header (progress, options) and named binary arrays (weights,
// optimiser moments). attn's own small format, "attn-checkpoint/2": magic line, the header's
// length (8 bytes, little-endian), the header, then the arrays back to back; the header gives
// each array's type, offset and length, and the body's checksum ("body_hash": io/content_hash.hpp
// over every byte after the header, 16 hex digits), checked on load. "attn-checkpoint/1" (no
// checksum) is still known as a checkpoint but refused on load. Written to a temporary file and renamed into place, so
// an interrupted save leaves the previous checkpoint whole.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace attn::train {

class checkpoint {
 public:
  nlohmann::json header;  // free-form: the trainer's progress and options

  void put(const std::string& name, const std::vector<float>& v);
  void put(const std::string& name, const std::vector<double>& v);
  void put(const std::string& name, const std::vector<int64_t>& v);
  // Input errors name the file when the array is missing or of another type or length.
  std::vector<float> floats(const std::string& name, size_t expected) const;
  std::vector<double> doubles(const std::string& name) const;
  std::vector<int64_t> integers(const std::string& name, size_t expected) const;

  void save(const std::string& path) const;
  static checkpoint load(const std::string& path);
  // Whether the file begins as a checkpoint does (false when it cannot be read).
  static bool is_checkpoint(const std::string& path);
  // The run id in its header ("run"), "" when it has none or is not a readable checkpoint.
  static std::string run_of(const std::string& path);

 private:
  struct array {
    std::string type;  // "f32", "f64", "i64"
    std::string bytes;
  };
  const array& find(const std::string& name, const char* type) const;
  std::map<std::string, array> arrays_;
  std::string source_;  // the file it was loaded from, for messages
};

}  // namespace attn::train
