#include <gtest/gtest.h>
#include <unistd.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "attn/error.hpp"
#include "attn/safetensors.hpp"
#include "core/half.hpp"

namespace {

using attn::tensor;
using namespace std::string_literals;

void expect_input_error(const std::function<void()>& f, const std::vector<std::string>& words,
                        const std::string& where = "") {
  try {
    f();
  } catch (const attn::error& e) {
    EXPECT_EQ(e.kind(), attn::error_kind::input) << e.what();
    for (const auto& w : words)
      EXPECT_NE(std::string(e.what()).find(w), std::string::npos)
          << "message '" << e.what() << "' lacks '" << w << "'";
    if (!where.empty()) {
      EXPECT_EQ(e.where(), where) << e.what();
    }
    return;
  }
  ADD_FAILURE() << "no attn::error thrown; expected one mentioning " << words.front();
}

void expect_usage_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const attn::error& e) {
    EXPECT_EQ(e.kind(), attn::error_kind::usage) << e.what();
    return;
  }
  ADD_FAILURE() << "no attn::error thrown";
}

std::string u64_le(uint64_t n) {
  std::string out;
  for (int s = 0; s < 64; s += 8) out.push_back(static_cast<char>(n >> s));
  return out;
}

// A file with this header text (not padded) and data buffer.
std::string make_file(const std::string& header, const std::string& data) {
  return u64_le(header.size()) + header + data;
}

std::string f32_bytes(const std::vector<float>& values) {
  std::string out;
  for (float v : values) {
    const auto bits = std::bit_cast<uint32_t>(v);
    for (int s = 0; s < 32; s += 8) out.push_back(static_cast<char>(bits >> s));
  }
  return out;
}

std::string u16_bytes(const std::vector<uint16_t>& values) {
  std::string out;
  for (uint16_t v : values) {
    out.push_back(static_cast<char>(v & 0xFF));
    out.push_back(static_cast<char>(v >> 8));
  }
  return out;
}

uint32_t bits(float f) { return std::bit_cast<uint32_t>(f); }

void expect_same_bits(const tensor& a, const tensor& b) {
  ASSERT_EQ(a.shape(), b.shape());
  const auto va = a.contiguous().values(), vb = b.contiguous().values();
  ASSERT_EQ(va.size(), vb.size());
  for (size_t i = 0; i < va.size(); ++i) EXPECT_EQ(bits(va[i]), bits(vb[i])) << "at " << i;
}

// One valid F32 tensor "a" of shape [2] (8 bytes); malformed cases start from this and break it.
const std::string valid_header = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";

void expect_bad_header(const std::string& header, const std::string& data,
                       const std::vector<std::string>& words, const std::string& where = "") {
  expect_input_error([&] { attn::parse_safetensors(make_file(header, data), "bad.safetensors"); },
                     words, where);
}

// ---- round trips and layout ----

attn::safetensors_file sample_file() {
  attn::safetensors_file f;
  f.tensors.emplace("scalar", tensor(attn::shape_t{}, std::vector<float>{-7.5f}));
  f.tensors.emplace("b.vec", tensor({3}, {1.0f, -0.0f, INFINITY}));
  f.tensors.emplace("a.mat", tensor({2, 3}, {1, 2, 3, 4, 5, 6}));
  std::vector<float> v(24);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i) / 7.0f;
  f.tensors.emplace("rank4", tensor({1, 2, 3, 4}, v));
  f.tensors.emplace("empty", tensor({0, 5}));
  f.metadata = {{"format", "pt"}, {"note", "ünïcode"}};
  return f;
}

TEST(Safetensors, RoundTripsF32AcrossRanksEmptyTensorsAndMetadata) {
  const auto f = sample_file();
  const auto back = attn::parse_safetensors(attn::encode_safetensors(f), "rt.safetensors");
  EXPECT_EQ(back.metadata, f.metadata);
  ASSERT_EQ(back.tensors.size(), f.tensors.size());
  for (const auto& [name, t] : f.tensors) {
    ASSERT_TRUE(back.tensors.count(name)) << name;
    expect_same_bits(back.tensors.at(name), t);
  }
}

TEST(Safetensors, RoundTripsF16WithRounding) {
  attn::safetensors_file f;
  // 1/3 is not a half; it must come back as the nearest half, 0x3555.
  f.tensors.emplace("x", tensor({5}, {1.0f, -2.5f, 65504.0f, 1.0f / 3.0f, 1e6f}));
  const std::string bytes = attn::encode_safetensors(f, attn::safetensors_dtype::f16);
  const auto back = attn::parse_safetensors(bytes, "h.safetensors");
  const tensor& x = back.tensors.at("x");
  EXPECT_EQ(x.at({0}), 1.0f);
  EXPECT_EQ(x.at({1}), -2.5f);
  EXPECT_EQ(x.at({2}), 65504.0f);
  EXPECT_EQ(x.at({3}), attn::half_to_float(0x3555));
  EXPECT_TRUE(std::isinf(x.at({4})));
  EXPECT_NE(bytes.find(R"("dtype":"F16")"), std::string::npos);
}

TEST(Safetensors, EncodesTheExactExpectedBytes) {
  attn::safetensors_file f;
  f.tensors.emplace("w", tensor({1}, {1.0f}));
  const std::string header = R"({"w":{"data_offsets":[0,4],"dtype":"F32","shape":[1]}})";
  ASSERT_EQ(header.size(), 54u);
  const std::string expected = u64_le(56) + header + "  " + "\x00\x00\x80\x3f"s;
  EXPECT_EQ(attn::encode_safetensors(f), expected);
}

TEST(Safetensors, EncodedLayoutIsSortedPaddedAndChained) {
  const std::string bytes = attn::encode_safetensors(sample_file());
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i)
    n = n << 8 | static_cast<unsigned char>(bytes[static_cast<size_t>(i)]);
  EXPECT_EQ(n % 8, 0u);
  const auto header = nlohmann::json::parse(bytes.substr(8, n));
  EXPECT_EQ(header["__metadata__"]["format"], "pt");
  // Data in name order: a.mat, b.vec, empty, rank4, scalar.
  uint64_t at = 0;
  for (const char* name : {"a.mat", "b.vec", "empty", "rank4", "scalar"}) {
    const auto& offsets = header[name]["data_offsets"];
    EXPECT_EQ(offsets[0].get<uint64_t>(), at) << name;
    at = offsets[1].get<uint64_t>();
  }
  EXPECT_EQ(8 + n + at, bytes.size());
  // No metadata → no "__metadata__" key.
  attn::safetensors_file plain;
  plain.tensors.emplace("x", tensor({1}));
  EXPECT_EQ(attn::encode_safetensors(plain).find("__metadata__"), std::string::npos);
}

TEST(Safetensors, EncodesNonContiguousTensorsRowMajor) {
  attn::safetensors_file f;
  f.tensors.emplace("t", tensor({2, 3}, {1, 2, 3, 4, 5, 6}).transpose(0, 1));
  const auto back = attn::parse_safetensors(attn::encode_safetensors(f), "t");
  const auto v = back.tensors.at("t").values();
  EXPECT_EQ(std::vector<float>(v.begin(), v.end()), (std::vector<float>{1, 4, 2, 5, 3, 6}));
}

TEST(Safetensors, EncodeRejectsUnsetTensorsReservedAndNonUtf8Names) {
  attn::safetensors_file unset;
  unset.tensors.emplace("x", tensor());
  expect_usage_error([&] { attn::encode_safetensors(unset); });
  attn::safetensors_file reserved;
  reserved.tensors.emplace("__metadata__", tensor({1}));
  expect_usage_error([&] { attn::encode_safetensors(reserved); });
  attn::safetensors_file bad_name;
  bad_name.tensors.emplace("\xff", tensor({1}));
  expect_usage_error([&] { attn::encode_safetensors(bad_name); });
}

TEST(Safetensors, DecodesKnownF16BitPatterns) {
  const std::vector<uint16_t> h = {0x3C00, 0xC000, 0x7BFF, 0x0001, 0x03FF, 0x0400,
                                   0x7C00, 0xFC00, 0x8000, 0x3555, 0x7E00};
  const std::string header = R"({"h":{"dtype":"F16","shape":[11],"data_offsets":[0,22]}})";
  const auto f = attn::parse_safetensors(make_file(header, u16_bytes(h)), "h");
  const auto v = f.tensors.at("h").values();
  EXPECT_EQ(v[0], 1.0f);
  EXPECT_EQ(v[1], -2.0f);
  EXPECT_EQ(v[2], 65504.0f);
  EXPECT_EQ(v[3], std::ldexp(1.0f, -24));     // smallest subnormal
  EXPECT_EQ(v[4], std::ldexp(1023.0f, -24));  // largest subnormal
  EXPECT_EQ(v[5], std::ldexp(1.0f, -14));     // smallest normal
  EXPECT_EQ(v[6], INFINITY);
  EXPECT_EQ(v[7], -INFINITY);
  EXPECT_EQ(bits(v[8]), 0x80000000u);  // -0
  EXPECT_EQ(v[9], 0.333251953125f);
  EXPECT_TRUE(std::isnan(v[10]));
}

TEST(Safetensors, DecodesKnownBF16BitPatterns) {
  const std::vector<uint16_t> b = {0x3F80, 0xC040, 0x4049, 0x7F80, 0x0001, 0x8000, 0x7FC0};
  const std::string header = R"({"b":{"dtype":"BF16","shape":[7],"data_offsets":[0,14]}})";
  const auto f = attn::parse_safetensors(make_file(header, u16_bytes(b)), "b");
  const auto v = f.tensors.at("b").values();
  EXPECT_EQ(v[0], 1.0f);
  EXPECT_EQ(v[1], -3.0f);
  EXPECT_EQ(v[2], 3.140625f);
  EXPECT_EQ(v[3], INFINITY);
  EXPECT_EQ(bits(v[4]), 0x00010000u);  // a float subnormal
  EXPECT_EQ(bits(v[5]), 0x80000000u);
  EXPECT_TRUE(std::isnan(v[6]));
}

TEST(Safetensors, ReadsUnalignedDataTrailingSpacesRank0AndEmpty) {
  // Header of odd length (data starts at an odd byte), trailing spaces, tensors listed out of
  // offset order, a rank-0 tensor and an empty one, and an extra key writers sometimes add.
  const std::string header = R"({"z":{"dtype":"F32","shape":[],"data_offsets":[8,12]},)"
                             R"("e":{"dtype":"BF16","shape":[3,0],"data_offsets":[8,8]},)"
                             R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}    )";
  ASSERT_EQ(header.size() % 2, 1u);
  const auto f = attn::parse_safetensors(make_file(header, f32_bytes({1.5f, -2.0f, 42.0f})), "u");
  EXPECT_EQ(f.tensors.at("a").at({1}), -2.0f);
  EXPECT_EQ(f.tensors.at("z").rank(), 0);
  EXPECT_EQ(f.tensors.at("z").values()[0], 42.0f);
  EXPECT_EQ(f.tensors.at("e").shape(), (attn::shape_t{3, 0}));
  EXPECT_TRUE(f.metadata.empty());
}

TEST(Safetensors, ReadsAnEmptyFileOfTensors) {
  const auto f = attn::parse_safetensors(make_file("{}", ""), "e");
  EXPECT_TRUE(f.tensors.empty());
}

TEST(Safetensors, ReadsFromAFileAndReportsMissingFiles) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("attn_test_st_" + std::to_string(::getpid()) + ".safetensors");
  {
    std::ofstream out(path, std::ios::binary);
    out << attn::encode_safetensors(sample_file());
  }
  const auto f = attn::read_safetensors(path.string());
  std::filesystem::remove(path);
  EXPECT_EQ(f.tensors.size(), 5u);
  expect_input_error([&] { attn::read_safetensors(path.string()); },
                     {path.string(), "cannot open", "No such file"});
}

// ---- malformed files: one test per class ----

TEST(SafetensorsMalformed, FileShorterThan8Bytes) {
  expect_input_error([] { attn::parse_safetensors("\x02\x00\x00"s, "s.st"); },
                     {"s.st", "3 bytes", "too short"}, "byte 0");
}

TEST(SafetensorsMalformed, HeaderOver100MB) {
  expect_input_error([] { attn::parse_safetensors(u64_le(100'000'001) + "{}", "s"); },
                     {"100000001", "100 MB"}, "byte 0");
}

TEST(SafetensorsMalformed, HeaderPastEndOfFile) {
  expect_input_error([] { attn::parse_safetensors(u64_le(3) + "{}", "s"); }, {"past the end"},
                     "byte 0");
}

TEST(SafetensorsMalformed, HeaderLengthNearTwoToThe64DoesNotWrap) {
  // 8 + N wraps to 0…7 for these; a reader that adds without checking would accept them.
  for (uint64_t n : {~uint64_t{0}, ~uint64_t{0} - 7, ~uint64_t{0} - 5}) {
    expect_input_error([&] { attn::parse_safetensors(u64_le(n) + "{}", "s"); }, {"header length"},
                       "byte 0");
  }
}

TEST(SafetensorsMalformed, HeaderDoesNotStartWithBrace) {
  expect_bad_header(" " + valid_header, f32_bytes({1, 2}), {"'{'"}, "byte 8");
  expect_bad_header("", "", {"'{'"}, "byte 8");
}

TEST(SafetensorsMalformed, HeaderNotUtf8) {
  // A bad byte, an overlong encoding, a surrogate, a truncated sequence.
  for (const std::string& bad : {"\xff"s, "\xc0\x80"s, "\xed\xa0\x80"s, "\xe2\x82"s}) {
    expect_bad_header(R"({"a)" + bad + R"(":{"dtype":"F32","shape":[0],"data_offsets":[0,0]}})", "",
                      {"UTF-8"}, "byte 11");
  }
}

TEST(SafetensorsMalformed, HeaderNotJson) {
  expect_bad_header(R"({"a":{"dtype":"F32",)", "", {"not valid JSON"});
  expect_bad_header("{} {}", "", {"not valid JSON"});
  // nlohmann alone would stop at a NUL and ignore the rest.
  expect_bad_header(valid_header + "\0\0"s, f32_bytes({1, 2}), {"not valid JSON", "NUL"},
                    "byte " + std::to_string(8 + valid_header.size()));
  expect_bad_header(valid_header + "\0garbage"s, f32_bytes({1, 2}), {"not valid JSON"});
}

TEST(SafetensorsMalformed, NumberBeyondDoubleIsAnInputError) {
  // nlohmann throws out_of_range, not parse_error, for 1e400 (found by fuzz_safetensors).
  expect_bad_header(R"({"a":{"dtype":"F32","shape":[1e400],"data_offsets":[0,4]}})",
                    f32_bytes({1}), {"not valid JSON", "number 1e400 is out of range"}, "byte 37");
}

TEST(SafetensorsMalformed, DuplicateTensorNames) {
  const std::string entry = R"({"dtype":"F32","shape":[1],"data_offsets":[0,4]})";
  expect_bad_header(R"({"w":)" + entry + R"(,"w":)" + entry + "}", f32_bytes({1}),
                    {"duplicate tensor name 'w'"}, "tensor 'w'");
  expect_bad_header(R"({"w":{"dtype":"F32","dtype":"F16","shape":[1],"data_offsets":[0,4]}})",
                    f32_bytes({1}), {"duplicate key 'dtype'"}, "tensor 'w'");
}

TEST(SafetensorsMalformed, RepeatedKeysAnywhereAreFound) {
  const std::string entry = R"({"dtype":"F32","shape":[1],"data_offsets":[0,4]})";
  // An empty name is a name like any other.
  expect_bad_header(R"({"":)" + entry + R"(,"":)" + entry + "}", f32_bytes({1}),
                    {"duplicate tensor name ''"}, "tensor ''");
  expect_bad_header(R"({"__metadata__":{"k":"a","k":"b"},"w":)" + entry + "}", f32_bytes({1}),
                    {"duplicate key 'k'"}, "__metadata__");
  expect_bad_header(R"({"__metadata__":{},"__metadata__":{},"w":)" + entry + "}", f32_bytes({1}),
                    {"duplicate tensor name '__metadata__'"}, "tensor '__metadata__'");
  // Deep inside an entry (which is bad anyway): still the repeated key first.
  expect_bad_header(R"({"w":{"x":[{"y":1,"y":2}]}})", "", {"duplicate key 'y'"}, "tensor 'w'");
}

// The header is checked one entry at a time as it is read, yet reports what checking it whole
// would: invalid JSON first, then a repeated key, then the first bad entry by name.
TEST(SafetensorsMalformed, ProblemsAreReportedInTheDocumentedOrder) {
  const std::string good = R"({"dtype":"F32","shape":[1],"data_offsets":[0,4]})";
  const std::string bad_dtype = R"({"dtype":"F64","shape":[1],"data_offsets":[4,8]})";
  const std::string bad_shape = R"({"dtype":"F32","shape":[-1],"data_offsets":[4,8]})";
  expect_bad_header(R"({"b":)" + bad_dtype + R"(,"a":)" + good + ",}", f32_bytes({1, 2}),
                    {"not valid JSON"});
  expect_bad_header(R"({"b":)" + bad_dtype + R"(,"a":)" + good + R"(,"a":)" + good + "}",
                    f32_bytes({1, 2}), {"duplicate tensor name 'a'"}, "tensor 'a'");
  expect_bad_header(R"({"c":)" + good + R"(,"b":)" + bad_dtype + R"(,"a":)" + bad_shape + "}",
                    f32_bytes({1, 2}), {"'shape' must be"}, "tensor 'a'");
  expect_bad_header(R"({"b":)" + bad_shape + R"(,"__metadata__":{"k":1},"x":)" + good + "}",
                    f32_bytes({1, 2}), {"'__metadata__' values must be strings"}, "__metadata__");
}

TEST(SafetensorsMalformed, EntryNotAnObject) {
  expect_bad_header(R"({"a":[1,2]})", "", {"object"}, "tensor 'a'");
}

TEST(SafetensorsMalformed, MissingOrBadDtype) {
  expect_bad_header(R"({"a":{"shape":[2],"data_offsets":[0,8]}})", f32_bytes({1, 2}), {"dtype"},
                    "tensor 'a'");
  expect_bad_header(R"({"a":{"dtype":4,"shape":[2],"data_offsets":[0,8]}})", f32_bytes({1, 2}),
                    {"dtype"}, "tensor 'a'");
}

TEST(SafetensorsMalformed, UnknownDtype) {
  expect_bad_header(R"({"a":{"dtype":"F33","shape":[2],"data_offsets":[0,8]}})", f32_bytes({1, 2}),
                    {"unknown dtype 'F33'"}, "tensor 'a'");
}

TEST(SafetensorsMalformed, UnsupportedDtype) {
  for (const char* dtype : {"I64", "F64", "BOOL", "U8", "F8_E4M3"}) {
    expect_bad_header(
        R"({"a":{"dtype":")" + std::string(dtype) + R"(","shape":[1],"data_offsets":[0,8]}})",
        std::string(8, '\0'),
        {"dtype " + std::string(dtype) + " not supported, expected F32, F16 or BF16"},
        "tensor 'a'");
  }
}

TEST(SafetensorsMalformed, BadShape) {
  for (const char* shape : {"[-2]", "[2.0]", "\"2\"", "[[2]]", "[9223372036854775808]", "null"}) {
    expect_bad_header(
        R"({"a":{"dtype":"F32","shape":)" + std::string(shape) + R"(,"data_offsets":[0,8]}})",
        f32_bytes({1, 2}), {"shape"}, "tensor 'a'");
  }
  expect_bad_header(R"({"a":{"dtype":"F32","data_offsets":[0,8]}})", f32_bytes({1, 2}), {"shape"},
                    "tensor 'a'");
}

TEST(SafetensorsMalformed, ShapeTimesDtypeSizeOverflows) {
  // 2^32 × 2^32 wraps to 0 in 64 bits; 2^62 × 4 bytes wraps to 0 as well. Unchecked, both would
  // match the empty data_offsets [0, 0].
  expect_bad_header(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,0]}})",
                    "", {"too many elements"}, "tensor 'a'");
  expect_bad_header(R"({"a":{"dtype":"F32","shape":[4611686018427387904],"data_offsets":[0,0]}})",
                    "", {"too many elements"}, "tensor 'a'");
  // A zero dimension after an overflowing partial product: the wrapped product is 0 too.
  expect_bad_header(
      R"({"a":{"dtype":"F32","shape":[4294967296,4294967296,0],"data_offsets":[0,0]}})", "",
      {"too many elements"}, "tensor 'a'");
  expect_bad_header(
      R"({"a":{"dtype":"F32","shape":[4611686018427387904,2,0],"data_offsets":[0,0]}})", "",
      {"too many elements"}, "tensor 'a'");
}

TEST(SafetensorsMalformed, BadDataOffsets) {
  for (const char* offsets : {"[0]", "[0,8,8]", "[-1,8]", "[0,8.0]", "null", "\"0,8\""}) {
    expect_bad_header(
        R"({"a":{"dtype":"F32","shape":[2],"data_offsets":)" + std::string(offsets) + "}}",
        f32_bytes({1, 2}), {"data_offsets"}, "tensor 'a'");
  }
  expect_bad_header(R"({"a":{"dtype":"F32","shape":[2]}})", f32_bytes({1, 2}), {"data_offsets"},
                    "tensor 'a'");
}

TEST(SafetensorsMalformed, BeginAfterEnd) {
  expect_bad_header(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", f32_bytes({1, 2}),
                    {"begin 8 is after end 0"}, "tensor 'a'");
}

TEST(SafetensorsMalformed, SizeDoesNotMatchShape) {
  expect_bad_header(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", f32_bytes({1, 2}),
                    {"needs 12 bytes", "hold 8"}, "tensor 'a'");
  expect_bad_header(R"({"a":{"dtype":"F16","shape":[2],"data_offsets":[0,8]}})", f32_bytes({1, 2}),
                    {"needs 4 bytes"}, "tensor 'a'");
}

TEST(SafetensorsMalformed, HoleBetweenTensors) {
  expect_bad_header(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                    R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
                    f32_bytes({1, 2, 3}), {"hole"}, "tensor 'b'");
  // The first tensor must start at 0.
  expect_bad_header(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", f32_bytes({1, 2}),
                    {"hole"}, "tensor 'a'");
}

TEST(SafetensorsMalformed, OverlappingTensors) {
  expect_bad_header(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                    R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                    f32_bytes({1, 2}), {"overlap"}, "tensor 'b'");
  // Two tensors on the very same bytes.
  expect_bad_header(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                    R"("b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})",
                    f32_bytes({1, 2}), {"overlap"});
}

TEST(SafetensorsMalformed, LastEndIsNotTheEndOfTheFile) {
  // Trailing bytes after the last tensor.
  expect_bad_header(valid_header, f32_bytes({1, 2, 3}), {"cover 8 bytes", "holds 12"});
  // Offsets reaching past the end of the file (a truncated file).
  expect_bad_header(valid_header, f32_bytes({1}), {"run past the end of the data buffer (4 bytes)"},
                    "tensor 'a'");
  // No tensors but a data buffer.
  expect_bad_header("{}", "abcd", {"cover 0 bytes", "holds 4"});
}

TEST(SafetensorsMalformed, BadMetadata) {
  expect_bad_header(R"({"__metadata__":["x"]})", "", {"__metadata__", "object"}, "__metadata__");
  expect_bad_header(R"({"__metadata__":{"epoch":3}})", "", {"__metadata__", "epoch", "string"},
                    "__metadata__");
  expect_bad_header(R"({"__metadata__":{"k":"a","k":"b"}})", "", {"duplicate key 'k'"},
                    "__metadata__");
}

// ---- float16 conversion ----

TEST(Half, EveryHalfRoundTripsThroughFloat) {
  for (uint32_t i = 0; i < 65536; ++i) {
    const auto h = static_cast<uint16_t>(i);
    const float f = attn::half_to_float(h);
    const bool is_nan = (h & 0x7C00) == 0x7C00 && (h & 0x3FF) != 0;
    ASSERT_EQ(std::isnan(f), is_nan) << std::hex << h;
    const uint16_t back = attn::float_to_half(f);
    if (is_nan) {
      ASSERT_TRUE(std::isnan(attn::half_to_float(back))) << std::hex << h;
    } else {
      ASSERT_EQ(back, h) << std::hex << h;
    }
  }
}

TEST(Half, HalfToFloatIsMonotonicOverPositiveFiniteValues) {
  for (uint16_t h = 1; h < 0x7C00; ++h)
    ASSERT_LT(attn::half_to_float(static_cast<uint16_t>(h - 1)), attn::half_to_float(h)) << h;
}

TEST(Half, FloatToHalfRoundsToNearestEven) {
  EXPECT_EQ(attn::float_to_half(1.0f), 0x3C00);
  EXPECT_EQ(attn::float_to_half(-2.0f), 0xC000);
  EXPECT_EQ(attn::float_to_half(65504.0f), 0x7BFF);
  EXPECT_EQ(attn::float_to_half(65519.0f), 0x7BFF);  // below the halfway point to 65536
  EXPECT_EQ(attn::float_to_half(65520.0f), 0x7C00);  // the tie rounds to even: infinity
  EXPECT_EQ(attn::float_to_half(1e10f), 0x7C00);
  EXPECT_EQ(attn::float_to_half(-1e10f), 0xFC00);
  EXPECT_EQ(attn::float_to_half(1.0f + std::ldexp(1.0f, -11)), 0x3C00);      // tie → even
  EXPECT_EQ(attn::float_to_half(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);  // tie → even
  EXPECT_EQ(attn::float_to_half(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)), 0x3C01);
  EXPECT_EQ(attn::float_to_half(std::ldexp(1.0f, -24)), 0x0001);     // smallest subnormal
  EXPECT_EQ(attn::float_to_half(std::ldexp(1.0f, -25)), 0x0000);     // tie → even (0)
  EXPECT_EQ(attn::float_to_half(std::ldexp(1.5f, -25)), 0x0001);     // above the tie
  EXPECT_EQ(attn::float_to_half(std::ldexp(3.0f, -25)), 0x0002);     // tie → even (2)
  EXPECT_EQ(attn::float_to_half(std::ldexp(1023.5f, -24)), 0x0400);  // rounds up to a normal
  EXPECT_EQ(attn::float_to_half(std::ldexp(1.0f, -30)), 0x0000);
  EXPECT_EQ(attn::float_to_half(-std::ldexp(1.0f, -30)), 0x8000);
  EXPECT_EQ(attn::float_to_half(std::numeric_limits<float>::denorm_min()), 0x0000);
  EXPECT_EQ(attn::float_to_half(INFINITY), 0x7C00);
  EXPECT_EQ(attn::float_to_half(-0.0f), 0x8000);
  // A NaN whose payload is only in the low float bits must not turn into infinity.
  const uint16_t nan = attn::float_to_half(std::bit_cast<float>(0x7F800001u));
  EXPECT_TRUE((nan & 0x7C00) == 0x7C00 && (nan & 0x3FF) != 0) << std::hex << nan;
}

#ifdef __FLT16_MAX__
// Where the compiler has a native half type, check against it over many float bit patterns:
// every sign/exponent/top-mantissa prefix combined with low bits around each rounding boundary.
TEST(Half, FloatToHalfMatchesTheCompilersFloat16) {
  std::vector<uint32_t> lows = {0, 1, 0xFFFF, 0x1FFF};
  for (int k = 0; k < 16; ++k) {
    const uint32_t p = 1u << k;
    lows.insert(lows.end(), {p, p - 1, p + 1, p | (p << 1), (p << 1) - 1});
  }
  for (uint32_t high = 0; high < 65536; ++high) {
    for (uint32_t low : lows) {
      const uint32_t b = high << 16 | (low & 0xFFFF);
      const float f = std::bit_cast<float>(b);
      const auto expected = std::bit_cast<uint16_t>(static_cast<_Float16>(f));
      const uint16_t got = attn::float_to_half(f);
      if (std::isnan(f)) {
        ASSERT_TRUE((got & 0x7C00) == 0x7C00 && (got & 0x3FF) != 0) << std::hex << b;
      } else {
        ASSERT_EQ(got, expected) << std::hex << b;
      }
    }
  }
  for (uint32_t i = 0; i < 65536; ++i) {
    const auto h = static_cast<uint16_t>(i);
    const float expected = static_cast<float>(std::bit_cast<_Float16>(h));
    const float got = attn::half_to_float(h);
    if (std::isnan(expected)) {
      ASSERT_TRUE(std::isnan(got));
    } else {
      ASSERT_EQ(bits(got), bits(expected)) << std::hex << h;
    }
  }
}
#endif

}  // namespace
