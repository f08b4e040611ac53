#include <gtest/gtest.h>
#include <unistd.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "attn/error.hpp"
#include "attn/npy.hpp"

namespace {

using attn::npy_dtype;
using attn::tensor;
using namespace std::string_literals;

// Runs f and checks it throws an input error whose message holds every word and whose `where`
// is `where` (when given).
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

// A .npy with the given header dict text, padded like NumPy does, then `data`.
std::string make_npy(const std::string& dict, const std::string& data, int major = 1) {
  const size_t length_size = major == 1 ? 2 : 4;
  std::string header = dict;
  const size_t unpadded = 8 + length_size + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header.push_back('\n');
  std::string out = "\x93NUMPY"s;
  out.push_back(static_cast<char>(major));
  out.push_back('\0');
  for (size_t i = 0; i < length_size; ++i)
    out.push_back(static_cast<char>(header.size() >> (8 * i)));
  return out + header + data;
}

std::string f32_bytes(const std::vector<float>& values) {
  std::string out;
  for (float v : values) {
    const auto bits = std::bit_cast<uint32_t>(v);
    for (int s = 0; s < 32; s += 8) out.push_back(static_cast<char>(bits >> s));
  }
  return out;
}

std::string f4_header(const std::string& shape) {
  return "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }";
}

void expect_same_bits(const tensor& a, const tensor& b) {
  ASSERT_EQ(a.shape(), b.shape());
  const auto va = a.contiguous().values(), vb = b.contiguous().values();
  ASSERT_EQ(va.size(), vb.size());
  for (size_t i = 0; i < va.size(); ++i)
    EXPECT_EQ(std::bit_cast<uint32_t>(va[i]), std::bit_cast<uint32_t>(vb[i])) << "at " << i;
}

// ---- bytes NumPy 1.24 writes (np.save), hardcoded ----

TEST(Npy, EncodeMatchesNumpyBytesExactly) {
  // np.save(f, np.zeros((2, 3), np.float32))
  const std::string expected = "\x93NUMPY\x01\x00\x76\x00"s +
                               "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }" +
                               std::string(58, ' ') + "\n" + std::string(24, '\0');
  ASSERT_EQ(expected.size(), 152u);
  EXPECT_EQ(attn::encode_npy(tensor({2, 3})), expected);
}

TEST(Npy, EncodeLeavesNumpysGrowthRoomInTheHeader) {
  // np.save of np.zeros((1,)*15, np.float32): the preamble is 192 bytes, not 128, because NumPy
  // reserves room for 21 digits in the first axis.
  const std::string dict =
      "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, "
      "1, 1), }";
  const std::string expected = "\x93NUMPY\x01\x00\xb6\x00"s + dict +
                               std::string(182 - 1 - dict.size(), ' ') + "\n" +
                               std::string(4, '\0');
  EXPECT_EQ(attn::encode_npy(tensor(attn::shape_t(15, 1))), expected);
}

TEST(Npy, EncodeRankZeroAndOneDimensionalShapes) {
  // np.save of np.zeros((), np.float32) and np.zeros((5,), np.float32)
  const std::string rank0 = "\x93NUMPY\x01\x00\x76\x00"s +
                            "{'descr': '<f4', 'fortran_order': False, 'shape': (), }" +
                            std::string(62, ' ') + "\n" + std::string(4, '\0');
  EXPECT_EQ(attn::encode_npy(tensor(attn::shape_t{})), rank0);
  const std::string rank1 = "\x93NUMPY\x01\x00\x76\x00"s +
                            "{'descr': '<f4', 'fortran_order': False, 'shape': (5,), }" +
                            std::string(60, ' ') + "\n" + std::string(20, '\0');
  EXPECT_EQ(attn::encode_npy(tensor({5})), rank1);
}

TEST(Npy, EncodeBoolMatchesNumpy) {
  // np.save(f, np.array([[True, False, True]]))
  const std::string expected = "\x93NUMPY\x01\x00\x76\x00"s +
                               "{'descr': '|b1', 'fortran_order': False, 'shape': (1, 3), }" +
                               std::string(58, ' ') + "\n" + "\x01\x00\x01"s;
  EXPECT_EQ(attn::encode_npy(tensor({1, 3}, {2.5f, 0.0f, -1.0f}), npy_dtype::boolean), expected);
}

TEST(Npy, PreambleIsAMultipleOf64EndingInNewline) {
  for (const attn::shape_t& shape :
       {attn::shape_t{}, {7}, {123456789, 0}, {3, 4, 5, 6, 7, 8, 9}, attn::shape_t(30, 1)}) {
    const std::string bytes = attn::encode_npy(tensor(shape));
    const size_t header_length =
        static_cast<unsigned char>(bytes[8]) | static_cast<unsigned char>(bytes[9]) << 8;
    EXPECT_EQ((10 + header_length) % 64, 0u) << attn::shape_to_string(shape);
    EXPECT_EQ(bytes[10 + header_length - 1], '\n');
  }
}

TEST(Npy, ReadsNumpyVersion2And3Files) {
  // np.lib.format.write_array(f, np.array([1.5, -2.0], np.float32), version=(2, 0)) and (3, 0)
  for (char major : {'\x02', '\x03'}) {
    const std::string bytes = "\x93NUMPY"s + major + "\x00\x74\x00\x00\x00"s +
                              "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }" +
                              std::string(58, ' ') + "\n" + "\x00\x00\xc0\x3f\x00\x00\x00\xc0"s;
    const auto a = attn::parse_npy(bytes, "v2.npy");
    EXPECT_EQ(a.dtype, npy_dtype::f32);
    EXPECT_EQ(a.values.shape(), attn::shape_t{2});
    EXPECT_EQ(a.values.at({0}), 1.5f);
    EXPECT_EQ(a.values.at({1}), -2.0f);
  }
}

TEST(Npy, ReadsHeaderVariantsNumpyAccepts) {
  const std::string data = f32_bytes({1, 2, 3, 4, 5, 6});
  // Other key order, double quotes, no trailing comma, extra spaces, Python 2 longs.
  for (const std::string& dict :
       {"{\"shape\": (2, 3), \"fortran_order\": False, \"descr\": \"<f4\"}"s,
        "{ 'descr' : '<f4' , 'fortran_order' : False , 'shape' : ( 2 , 3 , ) }"s,
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2L, 3L), }"s}) {
    const auto a = attn::parse_npy(make_npy(dict, data), "x.npy");
    EXPECT_EQ(a.values.shape(), (attn::shape_t{2, 3})) << dict;
    EXPECT_EQ(a.values.at({1, 2}), 6.0f) << dict;
  }
}

// ---- round trips ----

TEST(Npy, RoundTripsFloatTensorsOfManyRanks) {
  std::vector<tensor> cases;
  cases.emplace_back(attn::shape_t{}, std::vector<float>{3.25f});
  cases.emplace_back(attn::shape_t{4}, std::vector<float>{-0.0f, 1e-45f, INFINITY, -1e30f});
  std::vector<float> v24(24);
  for (size_t i = 0; i < v24.size(); ++i) v24[i] = static_cast<float>(i) * 0.37f - 3.0f;
  cases.emplace_back(attn::shape_t{4, 6}, v24);
  cases.emplace_back(attn::shape_t{2, 3, 1, 4}, v24);
  cases.emplace_back(attn::shape_t{0});
  cases.emplace_back(attn::shape_t{2, 0, 3});
  for (const tensor& t : cases) {
    const auto a = attn::parse_npy(attn::encode_npy(t), "rt.npy");
    EXPECT_EQ(a.dtype, npy_dtype::f32);
    expect_same_bits(a.values, t);
  }
}

TEST(Npy, RoundTripsNanBitPatterns) {
  const float nan = std::bit_cast<float>(0x7fc12345u);
  const auto a = attn::parse_npy(attn::encode_npy(tensor({1}, {nan})), "nan.npy");
  EXPECT_EQ(std::bit_cast<uint32_t>(a.values.at({0})), 0x7fc12345u);
}

TEST(Npy, RoundTripsBool) {
  const tensor t({2, 2}, {0.0f, 1.0f, 7.0f, NAN});  // nonzero and NaN are True, as in NumPy
  const auto a = attn::parse_npy(attn::encode_npy(t, npy_dtype::boolean), "b.npy");
  EXPECT_EQ(a.dtype, npy_dtype::boolean);
  EXPECT_EQ(a.values.shape(), (attn::shape_t{2, 2}));
  EXPECT_EQ(std::vector<float>(a.values.values().begin(), a.values.values().end()),
            (std::vector<float>{0, 1, 1, 1}));
  const auto empty = attn::parse_npy(attn::encode_npy(tensor({0, 5}), npy_dtype::boolean), "e");
  EXPECT_EQ(empty.values.shape(), (attn::shape_t{0, 5}));
}

TEST(Npy, BoolBytesOtherThanOneReadAsTrue) {
  const auto a = attn::parse_npy(
      make_npy("{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }", "\x00\x02\xff"s), "b");
  EXPECT_EQ(a.values.at({0}), 0.0f);
  EXPECT_EQ(a.values.at({1}), 1.0f);
  EXPECT_EQ(a.values.at({2}), 1.0f);
}

TEST(Npy, EncodesNonContiguousTensorsInRowMajorOrder) {
  const tensor t({2, 3}, {1, 2, 3, 4, 5, 6});
  const auto a = attn::parse_npy(attn::encode_npy(t.transpose(0, 1)), "t.npy");
  EXPECT_EQ(a.values.shape(), (attn::shape_t{3, 2}));
  EXPECT_EQ(std::vector<float>(a.values.values().begin(), a.values.values().end()),
            (std::vector<float>{1, 4, 2, 5, 3, 6}));
}

TEST(Npy, EncodingAnUnsetTensorIsAUsageError) {
  try {
    attn::encode_npy(tensor());
    ADD_FAILURE() << "no error";
  } catch (const attn::error& e) {
    EXPECT_EQ(e.kind(), attn::error_kind::usage);
  }
}

TEST(Npy, ReadsFromAFileAndReportsMissingFiles) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("attn_test_npy_" + std::to_string(::getpid()) + ".npy");
  const tensor t({2, 2}, {1, 2, 3, 4});
  {
    std::ofstream out(path, std::ios::binary);
    out << attn::encode_npy(t);
  }
  const auto a = attn::read_npy(path.string());
  std::filesystem::remove(path);
  expect_same_bits(a.values, t);
  expect_input_error([&] { attn::read_npy(path.string()); }, {"cannot open", "No such file"});
}

// ---- malformed files: one test per class ----

TEST(NpyMalformed, BadMagic) {
  expect_input_error([] { attn::parse_npy("\x93NUMPX\x01\x00\x00\x00"s, "m.npy"); },
                     {"m.npy", "magic"}, "byte 0");
  expect_input_error([] { attn::parse_npy("", "m.npy"); }, {"magic"}, "byte 0");
}

TEST(NpyMalformed, TruncatedPreamble) {
  expect_input_error([] { attn::parse_npy("\x93NUMPY\x01"s, "t.npy"); }, {"truncated"}, "byte 6");
  expect_input_error([] { attn::parse_npy("\x93NUMPY\x01\x00\x76"s, "t.npy"); },
                     {"truncated", "preamble"}, "byte 8");
  expect_input_error([] { attn::parse_npy("\x93NUMPY\x02\x00\x76\x00\x00"s, "t.npy"); },
                     {"truncated", "preamble"}, "byte 8");
}

TEST(NpyMalformed, UnsupportedVersion) {
  std::string bytes = make_npy(f4_header("(1,)"), f32_bytes({1}));
  bytes[6] = '\x04';
  expect_input_error([&] { attn::parse_npy(bytes, "v.npy"); }, {"version 4.0"}, "byte 6");
}

TEST(NpyMalformed, TruncatedHeader) {
  const std::string whole = make_npy(f4_header("(1,)"), f32_bytes({1}));
  expect_input_error([&] { attn::parse_npy(whole.substr(0, 50), "h.npy"); },
                     {"truncated", "header"}, "byte 10");
}

TEST(NpyMalformed, HeaderNotADict) {
  expect_input_error([] { attn::parse_npy(make_npy("[1, 2, 3]", ""), "d.npy"); },
                     {"header", "dict"}, "header");
  expect_input_error(
      [] { attn::parse_npy(make_npy(f4_header("(1,)") + " junk", f32_bytes({1})), "d.npy"); },
      {"after the closing"}, "header");
  expect_input_error(
      [] { attn::parse_npy(make_npy("{'descr': '<f4', 'fortran_order': False", ""), "d.npy"); },
      {"header"}, "header");
}

TEST(NpyMalformed, MissingOrUnexpectedKey) {
  expect_input_error(
      [] { attn::parse_npy(make_npy("{'descr': '<f4', 'fortran_order': False}", ""), "k.npy"); },
      {"missing key 'shape'"}, "header");
  expect_input_error(
      [] { attn::parse_npy(make_npy("{'descr': '<f4', 'shape': (1,)}", f32_bytes({1})), "k.npy"); },
      {"missing key 'fortran_order'"}, "header");
  expect_input_error(
      [] {
        attn::parse_npy(
            make_npy("{'desc': '<f4', 'fortran_order': False, 'shape': (1,), }", f32_bytes({1})),
            "k.npy");
      },
      {"unexpected key 'desc'"}, "header");
  expect_input_error(
      [] {
        attn::parse_npy(
            make_npy("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': ()}",
                     f32_bytes({1})),
            "k.npy");
      },
      {"duplicate key 'descr'"}, "header");
}

TEST(NpyMalformed, BadShape) {
  for (const char* shape : {"(2)", "(-2,)", "(2.5,)", "[2, 3]", "(2, 'a')", "(,)", "(2 3)",
                            "(99999999999999999999,)"}) {
    expect_input_error([&] { attn::parse_npy(make_npy(f4_header(shape), ""), "s.npy"); },
                       {"s.npy", "shape"}, "header");
  }
}

TEST(NpyMalformed, ShapeProductOverflows) {
  // Each dimension fits in int64, the product does not: must not wrap to a small size.
  expect_input_error(
      [] { attn::parse_npy(make_npy(f4_header("(4294967296, 4294967296, 16)"), ""), "o.npy"); },
      {"too many elements"}, "header");
  // 2^62 elements fit in int64, but 2^62 × 4 bytes do not fit in uint64.
  expect_input_error(
      [] { attn::parse_npy(make_npy(f4_header("(4611686018427387904,)"), ""), "o.npy"); },
      {"too many elements"}, "header");
  // 2^62 × 4 = 2^64 wraps to 0, which would match an empty data section if unchecked.
  expect_input_error(
      [] { attn::parse_npy(make_npy(f4_header("(4611686018427387904, 4)"), ""), "o.npy"); },
      {"too many elements"}, "header");
  // A zero at the end makes the product 0, but the partial product 2^63 already overflows int64:
  // still an input error, not a later failure inside the tensor constructor.
  expect_input_error(
      [] { attn::parse_npy(make_npy(f4_header("(4611686018427387904, 2, 0)"), ""), "o.npy"); },
      {"too many elements"}, "header");
}

TEST(NpyMalformed, UnsupportedDtypeOrByteOrder) {
  for (const std::string& descr : {">f4"s, "<f8"s, "<i4"s, "<f2"s, "|u1"s}) {
    const std::string dict = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (1,), }";
    expect_input_error([&] { attn::parse_npy(make_npy(dict, std::string(8, '\0')), "t.npy"); },
                       {"'" + descr + "'", "only float32", "bool", "supported"}, "header");
  }
  // Structured dtypes have a list as descr.
  expect_input_error(
      [] {
        attn::parse_npy(
            make_npy("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }", ""),
            "t.npy");
      },
      {"structured dtypes"}, "header");
}

TEST(NpyMalformed, FortranOrder) {
  expect_input_error(
      [] {
        attn::parse_npy(make_npy("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }",
                                 f32_bytes({1, 2, 3, 4})),
                        "f.npy");
      },
      {"Fortran"}, "header");
}

TEST(NpyMalformed, DataShorterThanShape) {
  const std::string bytes = make_npy(f4_header("(2, 3)"), f32_bytes({1, 2, 3, 4, 5}));
  expect_input_error([&] { attn::parse_npy(bytes, "d.npy"); },
                     {"20 bytes", "needs 24", "truncated"}, "byte 128");
}

TEST(NpyMalformed, DataLongerThanShape) {
  const std::string bytes = make_npy(f4_header("(2,)"), f32_bytes({1, 2, 3}));
  expect_input_error([&] { attn::parse_npy(bytes, "d.npy"); }, {"12 bytes", "needs 8", "trailing"},
                     "byte 128");
  const std::string bools =
      make_npy("{'descr': '|b1', 'fortran_order': False, 'shape': (), }", "\x01\x01"s);
  expect_input_error([&] { attn::parse_npy(bools, "d.npy"); }, {"2 bytes", "needs 1"});
}

}  // namespace
