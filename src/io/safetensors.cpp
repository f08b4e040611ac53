// safetensors reading and writing. The whole header is validated (lengths, UTF-8, JSON, names,
// dtypes, shapes, offsets) before a single tensor byte is decoded, so a malformed file fails
// with one clear message instead of reading out of bounds.
#include "attn/safetensors.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "attn/error.hpp"
#include "io/read_file.hpp"
#include "core/half.hpp"

namespace attn {

namespace {

using json = nlohmann::json;

// The reference implementation's limit; a larger header is a corrupt length, not a real model.
constexpr uint64_t max_header_bytes = 100'000'000;

constexpr uint64_t max_elements = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());

enum class stored_dtype { f32, f16, bf16 };

// Every dtype name the format defines, so an unsupported one is told apart from a typo.
constexpr std::array<std::string_view, 19> known_dtypes = {
    "BOOL", "U8",  "I8",  "I16",     "U16",     "F16",     "BF16",    "I32",     "U32", "F32",
    "F64",  "I64", "U64", "F8_E5M2", "F8_E4M3", "F8_E8M0", "F6_E2M3", "F6_E3M2", "F4"};

std::string tensor_where(const std::string& name) { return fmt::format("tensor '{}'", name); }

// nlohmann's message without its "[json.exception.parse_error.101] " prefix, which means
// nothing to users.
std::string_view without_json_prefix(const std::exception& e) {
  std::string_view why = e.what();
  if (size_t bracket = why.find("] "); why.starts_with("[json.") && bracket != why.npos)
    why.remove_prefix(bracket + 2);
  return why;
}

// Text from the file as it appears in a message: long junk is cut so the message stays short.
std::string shown(std::string_view text) {
  constexpr size_t limit = 40;
  return text.size() <= limit ? std::string(text) : std::string(text.substr(0, limit)) + "…";
}

// Offset of the first byte that is not part of well-formed UTF-8 (no overlongs, no surrogates,
// nothing above U+10FFFF), or npos.
size_t first_invalid_utf8(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    const unsigned char c = p[i];
    size_t len = 0;
    uint32_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte
    if (c < 0x80) {
      ++i;
      continue;
    } else if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) lo = 0xA0;  // overlong
      if (c == 0xED) hi = 0x9F;  // surrogates
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) lo = 0x90;  // overlong
      if (c == 0xF4) hi = 0x8F;  // above U+10FFFF
    } else {
      return i;
    }
    if (n - i < len) return i;
    if (p[i + 1] < lo || p[i + 1] > hi) return i;
    for (size_t k = 2; k < len; ++k)
      if (p[i + k] < 0x80 || p[i + k] > 0xBF) return i;
    i += len;
  }
  return std::string_view::npos;
}

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

// One header entry, checked.
struct entry {
  std::string name;
  stored_dtype dtype = stored_dtype::f32;
  shape_t shape;
  uint64_t count = 0;  // elements
  uint64_t begin = 0, end = 0;
};

// nlohmann keeps only one of two equal keys, so duplicates are caught while parsing: one key set
// per open object.
struct duplicate_finder {
  std::vector<std::set<std::string>> open;
  std::string top_key;  // the current depth-1 key, to say which tensor a nested duplicate is in
  std::string duplicate, duplicate_parent;
  bool duplicate_at_top = false;

  bool operator()(int /*depth*/, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
        open.emplace_back();
        break;
      case json::parse_event_t::object_end:
        if (!open.empty()) open.pop_back();
        break;
      case json::parse_event_t::key: {
        if (open.empty() || !parsed.is_string()) break;
        const auto& key = parsed.get_ref<const std::string&>();
        if (open.size() == 1) top_key = key;
        if (!open.back().insert(key).second && duplicate.empty()) {
          duplicate = key;
          duplicate_at_top = open.size() == 1;
          duplicate_parent = top_key;
        }
        break;
      }
      default:
        break;
    }
    return true;
  }
};

entry check_entry(const std::string& name, const json& info, const std::string& source) {
  const std::string where = tensor_where(name);
  if (!info.is_object())
    throw_input(source, "entry must be an object with dtype, shape and data_offsets", where);
  entry e;
  e.name = name;

  const auto dtype_it = info.find("dtype");
  if (dtype_it == info.end() || !dtype_it->is_string())
    throw_input(source, "missing or non-string 'dtype'", where);
  const auto& dtype = dtype_it->get_ref<const std::string&>();
  uint64_t item_size = 0;
  if (dtype == "F32") {
    e.dtype = stored_dtype::f32;
    item_size = 4;
  } else if (dtype == "F16") {
    e.dtype = stored_dtype::f16;
    item_size = 2;
  } else if (dtype == "BF16") {
    e.dtype = stored_dtype::bf16;
    item_size = 2;
  } else if (std::find(known_dtypes.begin(), known_dtypes.end(), dtype) != known_dtypes.end()) {
    throw_input(source, fmt::format("dtype {} not supported, expected F32, F16 or BF16", dtype),
                where);
  } else {
    throw_input(source, fmt::format("unknown dtype '{}'", dtype), where);
  }

  const auto shape_it = info.find("shape");
  if (shape_it == info.end() || !shape_it->is_array())
    throw_input(source, "missing 'shape' (an array of non-negative integers)", where);
  // A checked product, kept within int64 at every step like shape_numel() (which the tensor
  // constructor calls), so no shape that passes here can make it throw later. nlohmann stores
  // non-negative integer literals as unsigned, negative ones as signed.
  // `reach` skips zero dimensions: [0, 2^32, 2^32] holds nothing, but the tensor's strides
  // would still overflow.
  e.count = 1;
  uint64_t reach = 1;
  for (const json& d : *shape_it) {
    if (!d.is_number_unsigned() || d.get<uint64_t>() > max_elements)
      throw_input(source,
                  fmt::format("'shape' must be an array of non-negative integers, got {}",
                              shape_it->dump()),
                  where);
    const uint64_t n = d.get<uint64_t>();
    if (n != 0 && reach > max_elements / n)
      throw_input(source, fmt::format("shape {} has too many elements", shape_it->dump()), where);
    if (n != 0) reach *= n;
    e.count *= n;  // count is reach or 0, so this fits too
    e.shape.push_back(static_cast<int64_t>(n));
  }
  if (e.count > std::numeric_limits<uint64_t>::max() / item_size)
    throw_input(source, fmt::format("shape {} has too many elements", shape_it->dump()), where);

  const auto offsets_it = info.find("data_offsets");
  if (offsets_it == info.end() || !offsets_it->is_array() || offsets_it->size() != 2 ||
      !(*offsets_it)[0].is_number_unsigned() || !(*offsets_it)[1].is_number_unsigned())
    throw_input(source, "'data_offsets' must be [begin, end] with non-negative integers", where);
  e.begin = (*offsets_it)[0].get<uint64_t>();
  e.end = (*offsets_it)[1].get<uint64_t>();
  if (e.begin > e.end)
    throw_input(source, fmt::format("data_offsets begin {} is after end {}", e.begin, e.end),
                where);
  const uint64_t need = e.count * item_size;
  if (need != e.end - e.begin)
    throw_input(source,
                fmt::format("shape {} of dtype {} needs {} bytes but data_offsets [{}, {}] hold {}",
                            shape_it->dump(), dtype, need, e.begin, e.end, e.end - e.begin),
                where);
  return e;
}

tensor decode(const entry& e, const unsigned char* data) {
  std::vector<float> values(static_cast<size_t>(e.count));
  const unsigned char* p = data + e.begin;
  // Byte-by-byte loads: the data may be unaligned, and the file is little-endian whatever the host.
  switch (e.dtype) {
    case stored_dtype::f32:
      for (size_t i = 0; i < values.size(); ++i)
        values[i] = std::bit_cast<float>(load_u32_le(p + 4 * i));
      break;
    case stored_dtype::f16:
      for (size_t i = 0; i < values.size(); ++i) values[i] = half_to_float(load_u16_le(p + 2 * i));
      break;
    case stored_dtype::bf16:
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

  duplicate_finder duplicates;
  json root;
  try {
    root = json::parse(header, std::ref(duplicates));
  } catch (const json::parse_error& e) {
    throw_input(source, fmt::format("header is not valid JSON: {}", without_json_prefix(e)),
                fmt::format("byte {}", 8 + (e.byte > 0 ? e.byte - 1 : 0)));
  } catch (const json::out_of_range& e) {
    // A number beyond double (1e400): nlohmann tells it apart from syntax errors and gives no
    // position, but quotes the literal, which is found in the header instead.
    const std::string_view why = without_json_prefix(e);
    const size_t open = why.find('\''), close = why.rfind('\'');
    const std::string_view literal =
        open < close ? why.substr(open + 1, close - open - 1) : std::string_view();
    const size_t at = literal.empty() ? 0 : header.find(literal);
    throw_input(source,
                fmt::format("header is not valid JSON: number {} is out of range", shown(literal)),
                fmt::format("byte {}", 8 + (at == std::string_view::npos ? 0 : at)));
  } catch (const json::exception& e) {
    throw_input(source, fmt::format("header is not valid JSON: {}", without_json_prefix(e)),
                "byte 8");
  }
  if (!duplicates.duplicate.empty()) {
    if (duplicates.duplicate_at_top)
      throw_input(source, fmt::format("duplicate tensor name '{}'", duplicates.duplicate),
                  tensor_where(duplicates.duplicate));
    throw_input(source, fmt::format("duplicate key '{}'", duplicates.duplicate),
                duplicates.duplicate_parent == "__metadata__"
                    ? std::string("__metadata__")
                    : tensor_where(duplicates.duplicate_parent));
  }
  if (!root.is_object()) throw_input(source, "header is not a JSON object", "byte 8");

  safetensors_file out;
  std::vector<entry> entries;
  for (const auto& [name, info] : root.items()) {
    if (name == "__metadata__") {
      if (!info.is_object())
        throw_input(source, "'__metadata__' must be an object of strings", "__metadata__");
      for (const auto& [key, value] : info.items()) {
        if (!value.is_string())
          throw_input(source,
                      fmt::format("'__metadata__' values must be strings; '{}' is {}", key,
                                  value.type_name()),
                      "__metadata__");
        out.metadata.emplace(key, value.get<std::string>());
      }
      continue;
    }
    entries.push_back(check_entry(name, info, source));
  }

  // The tensors, in file order, must tile the data buffer exactly: no holes, no overlaps.
  const uint64_t data_size = bytes.size() - 8 - header_length;
  std::vector<const entry*> order;
  for (const entry& e : entries) order.push_back(&e);
  std::sort(order.begin(), order.end(), [](const entry* a, const entry* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  uint64_t at = 0;
  for (const entry* e : order) {
    // Past the end first: a truncated file or a wild offset is not a hole between tensors.
    if (e->end > data_size)
      throw_input(source,
                  fmt::format("data_offsets [{}, {}] run past the end of the data buffer ({} bytes)",
                              e->begin, e->end, data_size),
                  tensor_where(e->name));
    if (e->begin != at)
      throw_input(
          source,
          fmt::format("data_offsets [{}, {}] {} the previous tensor, which ends at {}", e->begin,
                      e->end, e->begin > at ? "leave a hole after" : "overlap", at),
          tensor_where(e->name));
    at = e->end;
  }
  if (at != data_size)
    throw_input(source,
                fmt::format("the tensors cover {} bytes of data but the data buffer holds {}", at,
                            data_size),
                fmt::format("byte {}", 8 + header_length + std::min(at, data_size)));

  const unsigned char* data = u + 8 + header_length;
  for (const entry& e : entries) out.tensors.emplace(e.name, decode(e, data));
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
