#include "train/checkpoint.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "attn/error.hpp"
#include "attn/train.hpp"
#include "io/content_hash.hpp"
#include "io/json_fields.hpp"
#include "io/read_file.hpp"
#include "io/replace_file.hpp"

namespace attn::train {

namespace {

constexpr std::string_view magic = "attn-checkpoint/2\n";
// The format before the body's checksum: still known as a checkpoint (a new run may replace it),
// never resumed.
constexpr std::string_view magic_1 = "attn-checkpoint/1\n";

std::string hex(uint64_t v) { return fmt::format("{:016x}", v); }

template <class T>
std::string to_bytes(const std::vector<T>& v) {
  std::string b(v.size() * sizeof(T), '\0');
  if (!v.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

template <class T>
std::vector<T> from_bytes(const std::string& b) {
  std::vector<T> v(b.size() / sizeof(T));
  if (!v.empty()) std::memcpy(v.data(), b.data(), v.size() * sizeof(T));
  return v;
}

}  // namespace

void checkpoint::put(const std::string& name, const std::vector<float>& v) { arrays_[name] = {"f32", to_bytes(v)}; }
void checkpoint::put(const std::string& name, const std::vector<double>& v) { arrays_[name] = {"f64", to_bytes(v)}; }
void checkpoint::put(const std::string& name, const std::vector<int64_t>& v) { arrays_[name] = {"i64", to_bytes(v)}; }

const checkpoint::array& checkpoint::find(const std::string& name, const char* type) const {
  auto it = arrays_.find(name);
  if (it == arrays_.end()) throw_input(source_, fmt::format("checkpoint has no array '{}'", name));
  if (it->second.type != type)
    throw_input(source_, fmt::format("checkpoint array '{}' is {}, expected {}", name, it->second.type, type));
  return it->second;
}

// Weights and optimiser state are finite in any run that trained; NaN or infinity means the file
// is damaged (or the run had diverged) and would only train a NaN model.
template <class T>
void check_finite(const std::vector<T>& v, const std::string& name, const std::string& source) {
  for (size_t i = 0; i < v.size(); ++i)
    if (!std::isfinite(v[i]))
      throw_input(source, fmt::format("checkpoint array '{}' holds a non-finite value", name),
                  fmt::format("element {}", i));
}

std::vector<float> checkpoint::floats(const std::string& name, size_t expected) const {
  std::vector<float> v = from_bytes<float>(find(name, "f32").bytes);
  if (v.size() != expected)
    throw_input(source_, fmt::format("checkpoint array '{}' has {} values, expected {} (other options?)",
                                     name, v.size(), expected));
  check_finite(v, name, source_);
  return v;
}

std::vector<double> checkpoint::doubles(const std::string& name) const {
  std::vector<double> v = from_bytes<double>(find(name, "f64").bytes);
  check_finite(v, name, source_);
  return v;
}

std::vector<int64_t> checkpoint::integers(const std::string& name, size_t expected) const {
  std::vector<int64_t> v = from_bytes<int64_t>(find(name, "i64").bytes);
  if (v.size() != expected)
    throw_input(source_, fmt::format("checkpoint array '{}' has {} values, expected {}", name,
                                     v.size(), expected));
  return v;
}

void checkpoint::save(const std::string& path) const {
  nlohmann::json index = nlohmann::json::object();
  uint64_t offset = 0;
  for (const auto& [name, a] : arrays_) {
    index[name] = {{"type", a.type}, {"offset", offset}, {"bytes", a.bytes.size()}};
    offset += a.bytes.size();
  }
  // The body's checksum, so that a flipped byte among the weights or moments is found on resume
  // rather than trained on.
  io::content_hash body;
  for (const auto& [name, a] : arrays_) body.update(a.bytes.data(), a.bytes.size());
  const std::string head =
      nlohmann::json{{"header", header}, {"arrays", index}, {"body_hash", hex(body.value())}}.dump(
          -1, ' ', false, nlohmann::json::error_handler_t::replace);
  io::replace_file(path, "checkpoint", [&](std::ostream& out) {
    out.write(magic.data(), static_cast<std::streamsize>(magic.size()));
    unsigned char length[8];
    for (int i = 0; i < 8; ++i) length[i] = static_cast<unsigned char>(static_cast<uint64_t>(head.size()) >> (8 * i));
    out.write(reinterpret_cast<const char*>(length), 8);
    out.write(head.data(), static_cast<std::streamsize>(head.size()));
    for (const auto& [name, a] : arrays_) out.write(a.bytes.data(), static_cast<std::streamsize>(a.bytes.size()));
  });
}

bool checkpoint::is_checkpoint(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string head(magic.size(), '\0');
  return in.read(head.data(), static_cast<std::streamsize>(head.size())) && (head == magic || head == magic_1);
}

std::string checkpoint::run_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string head(magic.size(), '\0');
  unsigned char length[8];
  if (!in.read(head.data(), static_cast<std::streamsize>(head.size())) || head != magic ||
      !in.read(reinterpret_cast<char*>(length), 8))
    return "";
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<uint64_t>(length[i]) << (8 * i);
  if (n > (uint64_t{1} << 30)) return "";
  std::string text(n, '\0');
  if (!in.read(text.data(), static_cast<std::streamsize>(n))) return "";
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object() || !j.contains("header") || !j["header"].is_object()) return "";
  const nlohmann::json& h = j["header"];
  return h.contains("run") && h["run"].is_string() ? h["run"].get<std::string>() : "";
}

checkpoint checkpoint::load(const std::string& path) {
  const std::string bytes = read_file(path);
  checkpoint c;
  c.source_ = path;
  if (bytes.size() >= magic_1.size() && bytes.compare(0, magic_1.size(), magic_1) == 0)
    throw_input(path, "a checkpoint of an older attn (attn-checkpoint/1, without a checksum): it "
                      "cannot be resumed; start the run again without --resume");
  if (bytes.size() < magic.size() + 8 || bytes.compare(0, magic.size(), magic) != 0)
    throw_input(path, "not an attn checkpoint (bad magic)");
  uint64_t length = 0;
  for (int i = 0; i < 8; ++i)
    length |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[magic.size() + static_cast<size_t>(i)])) << (8 * i);
  const size_t start = magic.size() + 8;
  if (length > bytes.size() - start) throw_input(path, "truncated checkpoint header");
  // The header is read as untrusted: parsed without exceptions, every entry checked by name.
  const std::string where_header = fmt::format("byte {}", start);
  const nlohmann::json head =
      io::json_fields(path, "checkpoint").parse(bytes.substr(start, length), "header");
  if (!head.is_object()) throw_input(path, "bad checkpoint header: not a JSON object", where_header);
  if (!head.contains("header") || !head["header"].is_object())
    throw_input(path, "bad checkpoint header: no 'header' object", where_header);
  if (!head.contains("arrays") || !head["arrays"].is_object())
    throw_input(path, "bad checkpoint header: no 'arrays' object", where_header);
  c.header = head["header"];
  const size_t data = start + length;
  if (!head.contains("body_hash") || !head["body_hash"].is_string())
    throw_input(path, "bad checkpoint header: no 'body_hash' string", where_header);
  if (head["body_hash"].get<std::string>() != hex(io::hash_bytes(bytes.data() + data, bytes.size() - data)))
    throw_input(path, "damaged checkpoint: its arrays do not match the checksum in its header",
                fmt::format("bytes {} to {}", data, bytes.size()));
  for (const auto& [name, a] : head["arrays"].items()) {
    const auto unsigned_field = [&](const char* key) {
      if (!a.is_object() || !a.contains(key) || !a[key].is_number_unsigned())
        throw_input(path, fmt::format("bad checkpoint header: array '{}' needs a non-negative "
                                      "integer '{}'", name, key), where_header);
      return a[key].get<uint64_t>();
    };
    const uint64_t offset = unsigned_field("offset"), size = unsigned_field("bytes");
    if (!a.contains("type") || !a["type"].is_string())
      throw_input(path, fmt::format("bad checkpoint header: array '{}' needs a string 'type'", name),
                  where_header);
    if (offset > bytes.size() - data || size > bytes.size() - data - offset)
      throw_input(path, fmt::format("truncated checkpoint: array '{}'", name));
    c.arrays_[name] = {a["type"].get<std::string>(), bytes.substr(data + offset, size)};
  }
  return c;
}

}  // namespace attn::train

namespace attn {
bool is_training_checkpoint(const std::string& path) { return train::checkpoint::is_checkpoint(path); }
bool remove_training_checkpoint(const std::string& path, const std::string& run) {
  if (run.empty() || train::checkpoint::run_of(path) != run) return false;
  return std::remove(path.c_str()) == 0;
}
}  // namespace attn
