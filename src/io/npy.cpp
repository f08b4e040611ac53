// .npy reading and writing. The header is a Python dict literal; rather than evaluating Python we
// parse exactly the subset NumPy writes (strings, True/False, tuples of integers), so anything
// else is reported instead of guessed at.
#include "attn/npy.hpp"

#include <fmt/format.h>

#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "attn/error.hpp"
#include "io/read_file.hpp"

namespace attn {

namespace {

constexpr char npy_magic[] = "\x93NUMPY";
constexpr size_t npy_magic_size = 6;
constexpr size_t npy_alignment = 64;  // NumPy pads the preamble so the data is 64-byte aligned

// Values a header dict may hold; the parse result of one value.
struct py_value {
  enum class kind { string, boolean, tuple } type = kind::string;
  std::string text;
  bool flag = false;
  shape_t items;
};

// A cursor over the header text. Errors name the header as a whole: it is short, and byte
// offsets inside a Python literal help less than saying what was expected.
class header_parser {
 public:
  header_parser(std::string_view text, const std::string& source) : text_(text), source_(source) {}

  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r'))
      ++pos_;
  }
  bool at_end() {
    skip_space();
    return pos_ >= text_.size();
  }
  bool accept(char c) {
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void expect(char c, const char* what) {
    if (!accept(c)) fail(fmt::format("expected {}", what));
  }

  std::string parse_string() {
    skip_space();
    if (pos_ >= text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"'))
      fail("expected a quoted string");
    const char quote = text_[pos_++];
    const size_t close = text_.find(quote, pos_);
    if (close == std::string_view::npos) fail("unterminated string");
    std::string out(text_.substr(pos_, close - pos_));
    pos_ = close + 1;
    return out;
  }

  py_value parse_value(const std::string& key) {
    skip_space();
    py_value v;
    if (pos_ < text_.size() && (text_[pos_] == '\'' || text_[pos_] == '"')) {
      v.type = py_value::kind::string;
      v.text = parse_string();
    } else if (text_.substr(pos_).starts_with("True")) {
      v.type = py_value::kind::boolean;
      v.flag = true;
      pos_ += 4;
    } else if (text_.substr(pos_).starts_with("False")) {
      v.type = py_value::kind::boolean;
      pos_ += 5;
    } else if (key == "descr" && accept('[')) {
      fail("structured dtypes (a list as 'descr') are not supported");
    } else if (accept('(')) {
      v.type = py_value::kind::tuple;
      parse_tuple_rest(v.items);
    } else {
      fail(fmt::format("the value of '{}' is not a string, True, False or a tuple of integers",
                       key));
    }
    return v;
  }

  [[noreturn]] void fail(const std::string& what) const {
    throw_input(source_, "bad .npy header: " + what, "header");
  }

 private:
  // After '(': "()", "(N,)", "(N, M)", "(N, M,)". "(N)" is not a tuple in Python, so not a shape.
  void parse_tuple_rest(shape_t& items) {
    if (accept(')')) return;
    bool trailing_comma = false;
    for (;;) {
      items.push_back(parse_dimension());
      trailing_comma = accept(',');
      if (accept(')')) break;
      if (!trailing_comma) fail("expected ',' or ')' in the shape tuple");
    }
    if (items.size() == 1 && !trailing_comma) fail("shape '(N)' is not a tuple; expected '(N,)'");
  }

  int64_t parse_dimension() {
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == '-') fail("negative dimension in shape");
    if (pos_ >= text_.size() || text_[pos_] < '0' || text_[pos_] > '9')
      fail("shape must be a tuple of non-negative integers");
    int64_t n = 0;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
      const int digit = text_[pos_++] - '0';
      if (n > (std::numeric_limits<int64_t>::max() - digit) / 10) fail("shape dimension too large");
      n = n * 10 + digit;
    }
    // Python 2 NumPy wrote longs as "3L"; NumPy still reads those files, so do we.
    if (pos_ < text_.size() && text_[pos_] == 'L') ++pos_;
    return n;
  }

  std::string_view text_;
  const std::string& source_;
  size_t pos_ = 0;
};

struct npy_header {
  npy_dtype dtype = npy_dtype::f32;
  shape_t shape;
};

npy_header parse_header_dict(std::string_view text, const std::string& source) {
  header_parser p(text, source);
  p.expect('{', "the header to be a dict starting with '{'");
  std::optional<std::string> descr;
  std::optional<bool> fortran_order;
  std::optional<shape_t> shape;
  while (!p.accept('}')) {
    const std::string key = p.parse_string();
    p.expect(':', "':' after a key");
    py_value v = p.parse_value(key);
    if (key == "descr") {
      if (descr) p.fail("duplicate key 'descr'");
      if (v.type != py_value::kind::string) p.fail("'descr' must be a string");
      descr = v.text;
    } else if (key == "fortran_order") {
      if (fortran_order) p.fail("duplicate key 'fortran_order'");
      if (v.type != py_value::kind::boolean) p.fail("'fortran_order' must be True or False");
      fortran_order = v.flag;
    } else if (key == "shape") {
      if (shape) p.fail("duplicate key 'shape'");
      if (v.type != py_value::kind::tuple) p.fail("'shape' must be a tuple of integers");
      shape = std::move(v.items);
    } else {
      p.fail(fmt::format("unexpected key '{}'", key));
    }
    if (!p.accept(',')) {
      p.expect('}', "',' or '}' in the header dict");
      break;
    }
  }
  if (!p.at_end()) p.fail("text after the closing '}'");
  if (!descr) p.fail("missing key 'descr'");
  if (!fortran_order) p.fail("missing key 'fortran_order'");
  if (!shape) p.fail("missing key 'shape'");

  npy_header h;
  if (*descr == "<f4") {
    h.dtype = npy_dtype::f32;
  } else if (*descr == "|b1") {
    h.dtype = npy_dtype::boolean;
  } else {
    throw_input(source,
                fmt::format("unsupported dtype '{}': only float32 ('<f4', little-endian) and "
                            "bool ('|b1') are supported",
                            *descr),
                "header");
  }
  if (*fortran_order)
    throw_input(source, "Fortran-order arrays are not supported; save with C order", "header");
  h.shape = std::move(*shape);
  return h;
}

uint32_t load_u32_le(const unsigned char* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
         static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
}

}  // namespace

npy_array parse_npy(const std::string& bytes, const std::string& source) {
  if (bytes.size() < npy_magic_size || bytes.compare(0, npy_magic_size, npy_magic) != 0)
    throw_input(source, "not a .npy file (bad magic, expected \\x93NUMPY)", "byte 0");
  if (bytes.size() < 8) throw_input(source, "truncated .npy preamble (no version)", "byte 6");
  const auto* u = reinterpret_cast<const unsigned char*>(bytes.data());
  const int major = u[6], minor = u[7];
  if (minor != 0 || major < 1 || major > 3)
    throw_input(source,
                fmt::format("unsupported .npy format version {}.{} (1.0, 2.0 and 3.0 are read)",
                            major, minor),
                "byte 6");
  // Version 1.0 stores the header length in 2 bytes; 2.0 and 3.0 (3.0: UTF-8 header) in 4.
  const size_t length_size = major == 1 ? 2 : 4;
  const size_t preamble = 8 + length_size;
  if (bytes.size() < preamble)
    throw_input(source, "truncated .npy preamble (no header length)", "byte 8");
  const size_t header_length =
      major == 1 ? static_cast<size_t>(u[8] | u[9] << 8) : static_cast<size_t>(load_u32_le(u + 8));
  if (header_length > bytes.size() - preamble)
    throw_input(source,
                fmt::format("truncated .npy header: {} bytes declared, {} present", header_length,
                            bytes.size() - preamble),
                fmt::format("byte {}", preamble));
  const npy_header h =
      parse_header_dict(std::string_view(bytes).substr(preamble, header_length), source);

  // A checked product, kept within int64 at every step like shape_numel() and the strides
  // (which the tensor constructor computes), so no shape from the file can wrap around or make
  // it throw later. `reach` skips zero dimensions: [0, 2^32, 2^32] holds nothing, but its
  // strides would still overflow.
  constexpr auto max_elements = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  const size_t item_size = h.dtype == npy_dtype::f32 ? 4 : 1;
  uint64_t count = 1, reach = 1;
  for (int64_t d : h.shape) {
    const auto ud = static_cast<uint64_t>(d);
    if (ud == 0) {
      count = 0;
      continue;
    }
    if (reach > max_elements / ud)
      throw_input(source, "shape " + shape_to_string(h.shape) + " has too many elements", "header");
    reach *= ud;
    count *= ud;  // count is reach or 0, so this fits too
  }
  if (count > std::numeric_limits<uint64_t>::max() / item_size)
    throw_input(source, "shape " + shape_to_string(h.shape) + " has too many elements", "header");
  const uint64_t need = count * item_size;
  const size_t data_offset = preamble + header_length;
  const size_t have = bytes.size() - data_offset;
  if (have != need)
    throw_input(
        source,
        fmt::format("data is {} bytes but shape {} needs {} ({})", have, shape_to_string(h.shape),
                    need, have < need ? "file truncated" : "trailing bytes"),
        fmt::format("byte {}", data_offset));

  std::vector<float> values(static_cast<size_t>(count));
  const unsigned char* data = u + data_offset;
  if (h.dtype == npy_dtype::f32) {
    // Assemble little-endian words byte by byte: no alignment or host-endianness assumptions.
    for (size_t i = 0; i < values.size(); ++i)
      values[i] = std::bit_cast<float>(load_u32_le(data + 4 * i));
  } else {
    for (size_t i = 0; i < values.size(); ++i) values[i] = data[i] != 0 ? 1.0f : 0.0f;
  }
  return {h.dtype, tensor(h.shape, std::move(values))};
}

npy_array read_npy(const std::string& path) { return parse_npy(read_file(path), path); }

std::string encode_npy(const tensor& t, npy_dtype dtype) {
  if (t.empty()) throw_usage("cannot write an empty (unset) tensor as .npy");
  const tensor dense = t.contiguous();
  const shape_t& shape = dense.shape();

  std::string dims;
  if (shape.size() == 1) {
    dims = fmt::format("{},", shape[0]);
  } else {
    dims = fmt::format("{}", fmt::join(shape, ", "));
  }
  std::string header = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}), }}",
                                   dtype == npy_dtype::f32 ? "<f4" : "|b1", dims);
  // NumPy (≥ 1.23) leaves room for the first axis to grow to 21 digits so the file can be
  // appended to in place; doing the same keeps our output byte-identical to np.save.
  if (!shape.empty()) header.append(21 - fmt::formatted_size("{}", shape[0]), ' ');
  const size_t unpadded = 10 + header.size() + 1;  // preamble + header + '\n'
  header.append((npy_alignment - unpadded % npy_alignment) % npy_alignment, ' ');
  header.push_back('\n');
  if (header.size() > 0xFFFF) throw_usage("shape too long for a version 1.0 .npy header");

  std::string out(npy_magic, npy_magic_size);
  out.push_back('\x01');
  out.push_back('\x00');
  out.push_back(static_cast<char>(header.size() & 0xFF));
  out.push_back(static_cast<char>(header.size() >> 8));
  out += header;

  const std::span<const float> values = dense.values();
  if (dtype == npy_dtype::f32) {
    out.reserve(out.size() + 4 * values.size());
    for (float v : values) {
      const auto bits = std::bit_cast<uint32_t>(v);
      for (int shift = 0; shift < 32; shift += 8) out.push_back(static_cast<char>(bits >> shift));
    }
  } else {
    for (float v : values) out.push_back(v != 0.0f ? '\x01' : '\x00');
  }
  return out;
}

}  // namespace attn
