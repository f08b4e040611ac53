// safetensors reading and writing. The whole header is validated (lengths, UTF-8, JSON, names,
// dtypes, shapes, offsets; the JSON itself in safetensors_header.cpp) before a single tensor
// byte is decoded, so a malformed file fails with one clear message instead of reading out of
// bounds.
#include "attn/safetensors.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "attn/error.hpp"
#include "core/utf8.hpp"
#include "core/half.hpp"
#include "io/read_file.hpp"
#include "io/safetensors_header.hpp"

namespace attn {

namespace {

using json = nlohmann::json;

// The reference implementation's limit; a larger header is a corrupt length, not a real model.
constexpr uint64_t max_header_bytes = 100'000'000;

uint64_t load_u64_le(const unsigned char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = v << 8 | p[i];
  return v;
}
uint32_t load_u32_le(const unsigned char* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
         static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
}
uint16_t load_u16_le(const unsigned char* p) { return static_cast<uint16_t>(p[0] | p[1] << 8); }

tensor decode(const io::tensor_entry& e, const unsigned char* data) {
  std::vector<float> values(static_cast<size_t>(e.count));
  const unsigned char* p = data + e.begin;
  // Byte-by-byte loads: the data may be unaligned, and the file is little-endian whatever the host.
  switch (e.dtype) {
    case io::stored_dtype::f32:
      for (size_t i = 0; i < values.size(); ++i)
        values[i] = std::bit_cast<float>(load_u32_le(p + 4 * i));
      break;
    case io::stored_dtype::f16:
      for (size_t i = 0; i < values.size(); ++i) values[i] = half_to_float(load_u16_le(p + 2 * i));
      break;
    case io::stored_dtype::bf16:
      for (size_t i = 0; i < values.size(); ++i) values[i] = bf16_to_float(load_u16_le(p + 2 * i));
      break;
  }
  return tensor(e.shape, std::move(values));
}

}  // namespace

safetensors_file parse_safetensors(const std::string& bytes, const std::string& source) {
  if (bytes.size() < 8)
    throw_input(
        source,
        fmt::format("file is {} bytes, too short for the 8-byte header length", bytes.size()),
        "byte 0");
  const auto* u = reinterpret_cast<const unsigned char*>(bytes.data());
  const uint64_t header_length = load_u64_le(u);
  if (header_length > max_header_bytes)
    throw_input(source, fmt::format("header length {} is over the 100 MB limit", header_length),
                "byte 0");
  // Compare against what is left rather than adding: 8 + N cannot wrap this way.
  if (header_length > bytes.size() - 8)
    throw_input(source,
                fmt::format("header length {} runs past the end of the file ({} bytes)",
                            header_length, bytes.size()),
                "byte 0");
  const std::string_view header = std::string_view(bytes).substr(8, header_length);
  if (header.empty() || header.front() != '{')
    throw_input(source, "header does not start with '{'", "byte 8");
  if (size_t bad = first_invalid_utf8(header); bad != std::string_view::npos)
    throw_input(source, "header is not valid UTF-8", fmt::format("byte {}", 8 + bad));

  // nlohmann's lexer takes a NUL byte for the end of input and would ignore what follows; JSON
  // allows none anywhere (inside strings it must be escaped).
  if (size_t nul = header.find('\0'); nul != std::string_view::npos)
    throw_input(source, "header is not valid JSON: it contains a NUL byte",
                fmt::format("byte {}", 8 + nul));

  io::safetensors_header checked = io::read_safetensors_header(header, source);

  // The tensors, in file order, must tile the data buffer exactly: no holes, no overlaps.
  using named_entry = std::pair<const std::string, io::tensor_entry>;
  const uint64_t data_size = bytes.size() - 8 - header_length;
  std::vector<const named_entry*> order;
  order.reserve(checked.tensors.size());
  for (const named_entry& e : checked.tensors) order.push_back(&e);
  std::sort(order.begin(), order.end(), [](const named_entry* a, const named_entry* b) {
    return a->second.begin != b->second.begin ? a->second.begin < b->second.begin
                                              : a->second.end < b->second.end;
  });
  uint64_t at = 0;
  for (const named_entry* named : order) {
    const io::tensor_entry& e = named->second;
    // Past the end first: a truncated file or a wild offset is not a hole between tensors.
    if (e.end > data_size)
      throw_input(
          source,
          fmt::format("data_offsets [{}, {}] run past the end of the data buffer ({} bytes)",
                      e.begin, e.end, data_size),
          io::tensor_where(named->first));
    if (e.begin != at)
      throw_input(source,
                  fmt::format("data_offsets [{}, {}] {} the previous tensor, which ends at {}",
                              e.begin, e.end, e.begin > at ? "leave a hole after" : "overlap", at),
                  io::tensor_where(named->first));
    at = e.end;
  }
  if (at != data_size)
    throw_input(source,
                fmt::format("the tensors cover {} bytes of data but the data buffer holds {}", at,
                            data_size),
                fmt::format("byte {}", 8 + header_length + std::min(at, data_size)));

  safetensors_file out;
  out.metadata = std::move(checked.metadata);
  const unsigned char* data = u + 8 + header_length;
  // In name order, so each tensor goes at the map's end.
  for (const auto& [name, e] : checked.tensors)
    out.tensors.emplace_hint(out.tensors.end(), name, decode(e, data));
  return out;
}

safetensors_file read_safetensors(const std::string& path) {
  return parse_safetensors(read_file(path), path);
}

std::string encode_safetensors(const safetensors_file& file, safetensors_dtype dtype) {
  const uint64_t item_size = dtype == safetensors_dtype::f32 ? 4 : 2;
  json header = json::object();
  if (!file.metadata.empty()) header["__metadata__"] = file.metadata;
  std::vector<tensor> dense;
  uint64_t at = 0;
  // std::map iterates by name, so the data goes in name order.
  for (const auto& [name, t] : file.tensors) {
    if (name == "__metadata__") throw_usage("'__metadata__' cannot be a tensor name");
    if (t.empty()) throw_usage(fmt::format("tensor '{}' is unset", name));
    dense.push_back(t.contiguous());
    const uint64_t bytes = static_cast<uint64_t>(t.numel()) * item_size;
    header[name] = {{"dtype", dtype == safetensors_dtype::f32 ? "F32" : "F16"},
                    {"shape", t.shape()},
                    {"data_offsets", {at, at + bytes}}};
    at += bytes;
  }
  std::string text;
  try {
    text = header.dump(-1, ' ', false, json::error_handler_t::strict);
  } catch (const json::type_error&) {
    throw_usage("tensor names and metadata must be valid UTF-8");
  }
  text.append((8 - text.size() % 8) % 8, ' ');

  std::string out;
  out.reserve(8 + text.size() + at);
  for (int shift = 0; shift < 64; shift += 8)
    out.push_back(static_cast<char>(static_cast<uint64_t>(text.size()) >> shift));
  out += text;
  for (const tensor& t : dense) {
    for (float v : t.values()) {
      if (dtype == safetensors_dtype::f32) {
        const auto bits = std::bit_cast<uint32_t>(v);
        for (int shift = 0; shift < 32; shift += 8) out.push_back(static_cast<char>(bits >> shift));
      } else {
        const uint16_t bits = float_to_half(v);
        out.push_back(static_cast<char>(bits & 0xFF));
        out.push_back(static_cast<char>(bits >> 8));
      }
    }
  }
  return out;
}

}  // namespace attn
