#include "train/checkpoint.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <cstring>
#include <fstream>

#include "attn/error.hpp"
#include "io/read_file.hpp"

namespace attn::train {

namespace {

constexpr std::string_view magic = "attn-checkpoint/1\n";

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

std::vector<float> checkpoint::floats(const std::string& name, size_t expected) const {
  std::vector<float> v = from_bytes<float>(find(name, "f32").bytes);
  if (v.size() != expected)
    throw_input(source_, fmt::format("checkpoint array '{}' has {} values, expected {} (other options?)",
                                     name, v.size(), expected));
  return v;
}

std::vector<double> checkpoint::doubles(const std::string& name) const {
  return from_bytes<double>(find(name, "f64").bytes);
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
  const std::string head = nlohmann::json{{"header", header}, {"arrays", index}}.dump();
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw_input(tmp, "cannot write the checkpoint");
    out.write(magic.data(), static_cast<std::streamsize>(magic.size()));
    unsigned char length[8];
    for (int i = 0; i < 8; ++i) length[i] = static_cast<unsigned char>(static_cast<uint64_t>(head.size()) >> (8 * i));
    out.write(reinterpret_cast<const char*>(length), 8);
    out.write(head.data(), static_cast<std::streamsize>(head.size()));
    for (const auto& [name, a] : arrays_) out.write(a.bytes.data(), static_cast<std::streamsize>(a.bytes.size()));
    out.close();
    if (!out) {
      std::remove(tmp.c_str());
      throw_input(tmp, "cannot write the checkpoint (disk full?)");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw_input(path, "cannot move the checkpoint into place");
  }
}

checkpoint checkpoint::load(const std::string& path) {
  const std::string bytes = read_file(path);
  checkpoint c;
  c.source_ = path;
  if (bytes.size() < magic.size() + 8 || bytes.compare(0, magic.size(), magic) != 0)
    throw_input(path, "not an attn checkpoint (bad magic)");
  uint64_t length = 0;
  for (int i = 0; i < 8; ++i)
    length |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[magic.size() + static_cast<size_t>(i)])) << (8 * i);
  const size_t start = magic.size() + 8;
  if (length > bytes.size() - start) throw_input(path, "truncated checkpoint header");
  try {
    const nlohmann::json head = nlohmann::json::parse(bytes.substr(start, length));
    c.header = head.at("header");
    const size_t data = start + length;
    for (const auto& [name, a] : head.at("arrays").items()) {
      const auto offset = a.at("offset").get<uint64_t>(), size = a.at("bytes").get<uint64_t>();
      if (offset > bytes.size() - data || size > bytes.size() - data - offset)
        throw_input(path, fmt::format("truncated checkpoint: array '{}'", name));
      c.arrays_[name] = {a.at("type").get<std::string>(), bytes.substr(data + offset, size)};
    }
  } catch (const nlohmann::json::exception& e) {
    throw_input(path, fmt::format("bad checkpoint header: {}", e.what()));
  }
  return c;
}

}  // namespace attn::train
