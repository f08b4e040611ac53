// attn::vectors: every file format, .attnvec round trips, nearest neighbours, the embedded
// default, and one test per kind of malformed input.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "attn/error.hpp"
#include "attn/vectors.hpp"
#include "core/half.hpp"

namespace {

using namespace std::string_literals;
namespace fs = std::filesystem;

// Runs f and checks it throws an error of `kind` whose message holds every word and whose
// `where` is `where` (when given).
void expect_error(attn::error_kind kind, const std::function<void()>& f,
                  const std::vector<std::string>& words, const std::string& where = "") {
  try {
    f();
  } catch (const attn::error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
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

void expect_input_error(const std::function<void()>& f, const std::vector<std::string>& words,
                        const std::string& where = "") {
  expect_error(attn::error_kind::input, f, words, where);
}

std::string f32_bytes(const std::vector<float>& values) {
  std::string out;
  for (float v : values) {
    const auto bits = std::bit_cast<uint32_t>(v);
    for (int s = 0; s < 32; s += 8) out.push_back(static_cast<char>(bits >> s));
  }
  return out;
}

uint64_t read_u64(const std::string& bytes, size_t at) {
  uint64_t v = 0;
  for (size_t i = 0; i < 8; ++i) v |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[at + i])) << (8 * i);
  return v;
}

void write_u64(std::string& bytes, size_t at, uint64_t v) {
  for (size_t i = 0; i < 8; ++i) bytes[at + i] = static_cast<char>(v >> (8 * i));
}

std::span<const unsigned char> as_bytes(const std::string& s) {
  return {reinterpret_cast<const unsigned char*>(s.data()), s.size()};
}

// The words and values every format test writes; the decimals are those the floats print as.
const std::vector<std::string> words = {"the", ",", "bank", "river"};
const std::vector<float> values = {0.5f, -1.25f, 3.0f,  0.1f,  0.002f,    -7.75f,
                                   1e-3f, 42.0f, -0.0f, 2.5e3f, -3.0e-5f, 0.333333f};
const std::vector<std::string> value_text = {"0.5", "-1.25", "3",      "0.1",   "2e-3",   "-7.75",
                                             "1e-3", "42",   "-0",     "2.5e3", "-3.0E-5", "0.333333"};

// The records as text lines: "word v1 v2 v3" + `trailing` + `eol`.
std::string text_records(const std::string& trailing = "", const std::string& eol = "\n",
                         const std::string& separator = " ") {
  std::string out;
  for (size_t i = 0; i < words.size(); ++i) {
    out += words[i];
    for (size_t j = 0; j < 3; ++j) out += separator + value_text[i * 3 + j];
    out += trailing + eol;
  }
  return out;
}

std::string binary_records(bool newline) {
  std::string out;
  for (size_t i = 0; i < words.size(); ++i) {
    out += words[i] + " ";
    out += f32_bytes({values.begin() + static_cast<long>(i * 3),
                      values.begin() + static_cast<long>(i * 3 + 3)});
    if (newline) out += "\n";
  }
  return out;
}

void expect_reference(const attn::vectors& v) {
  ASSERT_EQ(v.size(), 4);
  ASSERT_EQ(v.dim(), 3);
  for (int64_t i = 0; i < 4; ++i) {
    EXPECT_EQ(v.word(i), words[static_cast<size_t>(i)]);
    EXPECT_EQ(v.find(words[static_cast<size_t>(i)]), i);
    auto row = v.vector(i);
    for (size_t j = 0; j < 3; ++j)
      EXPECT_EQ(std::bit_cast<uint32_t>(row[j]),
                std::bit_cast<uint32_t>(values[static_cast<size_t>(i) * 3 + j]))
          << "word " << i << " value " << j << ": " << row[j];
  }
  EXPECT_TRUE(v.warnings().empty());
}

class vectors_files : public ::testing::Test {
 protected:
  void SetUp() override {
    static int counter = 0;
    dir_ = fs::temp_directory_path() /
           ("attn-test-vectors-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& bytes) {
    const fs::path path = dir_ / name;
    std::ofstream(path, std::ios::binary) << bytes;
    return path.string();
  }

  fs::path dir_;
};

// ---- the formats ----

TEST_F(vectors_files, every_format_loads_the_same_values) {
  struct example {
    std::string name, bytes;
    attn::vectors_format format;
  };
  const std::vector<example> examples = {
      {"glove.txt", text_records(), attn::vectors_format::glove_text},
      {"glove-tabs.txt", text_records("", "\n", "\t"), attn::vectors_format::glove_text},
      {"word2vec.txt", "4 3\n" + text_records(), attn::vectors_format::word2vec_text},
      {"fasttext.vec", "4 3\n" + text_records(" "), attn::vectors_format::word2vec_text},
      {"bom-crlf.txt", "\xEF\xBB\xBF" + text_records("", "\r\n"), attn::vectors_format::glove_text},
      {"bom-crlf.vec", "\xEF\xBB\xBF" "4 3\r\n" + text_records(" ", "\r\n"),
       attn::vectors_format::word2vec_text},
      {"no-final-newline.txt", text_records().substr(0, text_records().size() - 1),
       attn::vectors_format::glove_text},
      {"word2vec.bin", "4 3\n" + binary_records(true), attn::vectors_format::word2vec_binary},
      {"googlenews.bin", "4 3\n" + binary_records(false), attn::vectors_format::word2vec_binary},
  };
  for (const auto& e : examples) {
    SCOPED_TRACE(e.name);
    const std::string path = write(e.name, e.bytes);
    attn::vectors v = attn::vectors::load(path);
    EXPECT_EQ(v.format(), e.format);
    EXPECT_EQ(v.source(), path);
    expect_reference(v);
  }
}

TEST_F(vectors_files, binary_values_may_hold_newline_and_space_bytes) {
  // 0x0A200A20 and 0x200A200A are ordinary (tiny) floats whose bytes are '\n' and ' '.
  const float a = std::bit_cast<float>(0x0A200A20u), b = std::bit_cast<float>(0x200A200Au);
  const std::string bytes = "2 2\nx " + f32_bytes({a, b}) + "y " + f32_bytes({b, a});
  attn::vectors v = attn::vectors::load(write("odd.bin", bytes));
  EXPECT_EQ(v.format(), attn::vectors_format::word2vec_binary);
  ASSERT_EQ(v.size(), 2);
  EXPECT_EQ(v.word(1), "y");
  EXPECT_EQ(v.vector(0)[0], a);
  EXPECT_EQ(v.vector(1)[0], b);
}

TEST_F(vectors_files, glove_word_with_a_no_break_space) {
  const std::string dots = ".\u00A0.\u00A0.";
  attn::vectors v = attn::vectors::load(write("nbsp.txt", "the 1 2\n" + dots + " 3 4\n"));
  ASSERT_EQ(v.size(), 2);
  ASSERT_TRUE(v.find(dots).has_value());
  EXPECT_EQ(v.vector(*v.find(dots))[1], 4.0f);
}

TEST_F(vectors_files, word_with_ascii_spaces_takes_the_fields_before_the_values) {
  attn::vectors v = attn::vectors::load(write("spaces.txt", "the 1 2\nat  home 3 4\n"));
  ASSERT_TRUE(v.find("at  home").has_value());
  EXPECT_EQ(v.vector(*v.find("at  home"))[0], 3.0f);
}

TEST_F(vectors_files, integer_values_after_a_header_are_text) {
  attn::vectors v = attn::vectors::load(write("ints.vec", "2 3\na 1 2 3\nb 4 5 6\n"));
  EXPECT_EQ(v.format(), attn::vectors_format::word2vec_text);
  EXPECT_EQ(v.vector(1)[2], 6.0f);
}

TEST_F(vectors_files, tiny_values_underflow_to_zero_instead_of_failing) {
  attn::vectors v = attn::vectors::load(write("tiny.txt", "a 1e-50 -1e-400 1e-40\n"));
  EXPECT_EQ(v.vector(0)[0], 0.0f);
  EXPECT_EQ(v.vector(0)[1], 0.0f);
  EXPECT_TRUE(std::signbit(v.vector(0)[1]));
  EXPECT_NEAR(v.vector(0)[2], 1e-40f, 1e-44f);  // a subnormal
}

TEST_F(vectors_files, reads_from_a_pipe) {
  const std::string path = (dir_ / "fifo").string();
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  std::thread writer([&] { std::ofstream(path, std::ios::binary) << text_records(); });
  attn::vectors v = attn::vectors::load(path);
  writer.join();
  EXPECT_EQ(v.format(), attn::vectors_format::glove_text);
  expect_reference(v);
}

TEST_F(vectors_files, duplicate_words_keep_the_first_and_warn) {
  attn::vectors v = attn::vectors::load(write("dup.txt", "a 1 2\nb 3 4\na 5 6\nc 7 8\n"));
  ASSERT_EQ(v.size(), 3);
  EXPECT_EQ(v.word(2), "c");
  EXPECT_EQ(v.vector(*v.find("a"))[0], 1.0f);
  EXPECT_EQ(v.vector(*v.find("c"))[0], 7.0f);
  ASSERT_EQ(v.warnings().size(), 1u);
  EXPECT_NE(v.warnings()[0].find("duplicate word 'a' at line 3 kept the first"), std::string::npos)
      << v.warnings()[0];
}

TEST_F(vectors_files, many_duplicates_are_summed_up) {
  std::string text = "a 1\n";
  for (int i = 0; i < 15; ++i) text += "a 2\n";
  attn::vectors v = attn::vectors::load(write("dups.txt", text));
  EXPECT_EQ(v.size(), 1);
  ASSERT_EQ(v.warnings().size(), 11u);
  EXPECT_NE(v.warnings()[9].find("at line 11"), std::string::npos) << v.warnings()[9];
  EXPECT_NE(v.warnings()[10].find("5 more duplicate words"), std::string::npos) << v.warnings()[10];
}

TEST_F(vectors_files, duplicate_in_binary_names_the_record) {
  const std::string bytes = "2 1\nx " + f32_bytes({1}) + "\nx " + f32_bytes({2}) + "\n";
  attn::vectors v = attn::vectors::load(write("dup.bin", bytes));
  EXPECT_EQ(v.size(), 1);
  ASSERT_EQ(v.warnings().size(), 1u);
  EXPECT_NE(v.warnings()[0].find("duplicate word 'x' at record 2, byte 11"), std::string::npos)
      << v.warnings()[0];
}

// ---- .attnvec ----

attn::vectors small_vectors() {
  return attn::vectors::from_values(words, 3, values);
}

TEST_F(vectors_files, attnvec_float32_round_trip_is_exact) {
  const std::string bytes = small_vectors().encode_attnvec();
  expect_reference(attn::vectors::from_attnvec_bytes(as_bytes(bytes), "<mem>"));
  const std::string path = write("small.attnvec", bytes);
  attn::vectors v = attn::vectors::load(path);
  EXPECT_EQ(v.format(), attn::vectors_format::attnvec);
  EXPECT_EQ(v.source(), path);
  expect_reference(v);
  // Any name: the magic decides.
  expect_reference(attn::vectors::load(write("small.bin", bytes)));
}

TEST_F(vectors_files, attnvec_layout_follows_the_format) {
  const std::string bytes = small_vectors().encode_attnvec();
  EXPECT_EQ(bytes.substr(0, 8), "ATTNVEC1");
  EXPECT_EQ(bytes.substr(8, 8), "\x01\0\0\0\x01\0\0\0"s);  // version 1, float32
  EXPECT_EQ(read_u64(bytes, 16), 4u);
  EXPECT_EQ(read_u64(bytes, 24), 3u);
  EXPECT_EQ(read_u64(bytes, 32), 64u);
  EXPECT_EQ(read_u64(bytes, 40), 17u);  // "the\n,\nbank\nriver\n"
  EXPECT_EQ(bytes.substr(64, 17), "the\n,\nbank\nriver\n");
  EXPECT_EQ(read_u64(bytes, 48), 128u);
  EXPECT_EQ(read_u64(bytes, 56), 0u);
  EXPECT_EQ(bytes.size(), 128u + 4 * 3 * 4);
  EXPECT_EQ(bytes.substr(128), f32_bytes(values));
}

TEST_F(vectors_files, attnvec_float16_round_trip_within_half_precision) {
  const std::string bytes = small_vectors().encode_attnvec(0, /*float16=*/true);
  EXPECT_EQ(bytes[12], 2);  // dtype float16
  EXPECT_EQ(bytes.size(), 128u + 4 * 3 * 2);
  attn::vectors v = attn::vectors::load(write("small16.attnvec", bytes));
  ASSERT_EQ(v.size(), 4);
  for (int64_t i = 0; i < 4; ++i) {
    for (size_t j = 0; j < 3; ++j) {
      const float x = values[static_cast<size_t>(i) * 3 + j], y = v.vector(i)[j];
      EXPECT_EQ(y, attn::half_to_float(attn::float_to_half(x)));
      // 11 significant bits (normals); subnormal halves are spaced 2^-24 apart.
      EXPECT_LE(std::abs(x - y), std::max(std::abs(x) * 0x1p-11f, 0x1p-25f)) << x << " → " << y;
    }
  }
}

TEST_F(vectors_files, attnvec_top_keeps_the_first_words) {
  const std::string bytes = small_vectors().encode_attnvec(2);
  attn::vectors v = attn::vectors::from_attnvec_bytes(as_bytes(bytes), "<mem>");
  ASSERT_EQ(v.size(), 2);
  EXPECT_EQ(v.word(1), ",");
  EXPECT_FALSE(v.find("bank").has_value());
  EXPECT_EQ(attn::vectors::from_attnvec_bytes(as_bytes(small_vectors().encode_attnvec(99)), "m").size(), 4);
  expect_error(attn::error_kind::usage, [] { (void)small_vectors().encode_attnvec(-1); }, {"top"});
}

TEST(vectors, float16_overflow_is_an_error_not_infinity) {
  auto v = attn::vectors::from_values({"big"}, 2, {1.0f, 70000.0f});
  expect_input_error([&] { (void)v.encode_attnvec(0, true); }, {"too large for float16", "big"},
                     "word 1");
  EXPECT_NO_THROW((void)v.encode_attnvec(0, false));
}

// ---- lookups and nearest ----

TEST(vectors, find_word_and_vector) {
  auto v = small_vectors();
  EXPECT_EQ(v.source(), "<values>");
  EXPECT_EQ(v.find("bank"), 2);
  EXPECT_FALSE(v.find("Bank").has_value());
  EXPECT_FALSE(v.find("").has_value());
  EXPECT_EQ(v.word(3), "river");
  EXPECT_EQ(v.vector(1)[2], -7.75f);
  expect_error(attn::error_kind::usage, [&] { (void)v.word(4); }, {"out of range"});
  expect_error(attn::error_kind::usage, [&] { (void)v.vector(-1); }, {"out of range"});
}

// Numbers the table lacks read as the mean of its "zero" … "ten" rows; its own rows come first.
TEST(vectors, lookup_reads_numbers_without_a_row_as_the_number_words_mean) {
  const auto v = attn::vectors::from_values({"bank", "two", "zero", "seven", "1990"}, 2,
                                            {9, 9, 2, 4, 0, 8, 7, -3, 5, 5});
  ASSERT_TRUE(v.lookup("bank").has_value());
  EXPECT_EQ(v.lookup("bank")->data(), v.vector(0).data());
  EXPECT_EQ(v.lookup("1990")->data(), v.vector(4).data());  // a row of its own wins
  for (const char* n : {"2", "3.5", "-4", "1,000", ".5", "1991"}) {
    const auto row = v.lookup(n);
    ASSERT_TRUE(row.has_value()) << n;
    EXPECT_EQ(std::vector<float>(row->begin(), row->end()), (std::vector<float>{3, 3})) << n;
    EXPECT_FALSE(v.find(n).has_value()) << n;  // find stays the table's own words
  }
  for (const char* other : {"1990s", "3,4", "zzqxv", "Two", ""})
    EXPECT_FALSE(v.lookup(other).has_value()) << other;
  // Without any number word there is no number vector: numbers stay unknown.
  auto no_numbers = attn::vectors::from_values({"bank", "river"}, 2, {1, 2, 3, 4});
  EXPECT_FALSE(no_numbers.lookup("1990").has_value());
  attn::vectors moved = std::move(no_numbers);
  EXPECT_FALSE(no_numbers.lookup("2").has_value());  // NOLINT(bugprone-use-after-move)
}

TEST(vectors, from_values_checks_its_arguments_and_drops_duplicates) {
  expect_error(attn::error_kind::usage, [] { attn::vectors::from_values({"a", "b"}, 2, {1, 2, 3}); },
               {"do not match 3 values"});
  expect_error(attn::error_kind::usage, [] { attn::vectors::from_values({"a"}, 0, {}); }, {"dim"});
  expect_error(attn::error_kind::usage, [] { attn::vectors::from_values({"a\nb"}, 1, {1}); },
               {"line break"});
  auto v = attn::vectors::from_values({"a", "b", "a", "c"}, 2, {1, 1, 2, 2, 3, 3, 4, 4});
  ASSERT_EQ(v.size(), 3);
  EXPECT_EQ(v.vector(*v.find("a"))[0], 1.0f);
  EXPECT_EQ(v.word(2), "c");  // the rows after a dropped one move up with their words
  EXPECT_EQ(v.vector(2)[1], 4.0f);
  ASSERT_EQ(v.warnings().size(), 1u);
  EXPECT_NE(v.warnings()[0].find("duplicate word 'a' at word 3"), std::string::npos);
}

TEST(vectors, nearest_orders_by_cosine_then_index) {
  auto v = attn::vectors::from_values({"a", "b", "c", "zero", "e"}, 2,
                                      {1, 0, 2, 0, 0, 1, 0, 0, -1, 0});
  const std::vector<float> q = {3, 0};
  auto top = v.nearest(q, 10);  // clipped to the 5 words
  ASSERT_EQ(top.size(), 5u);
  const std::vector<int64_t> order = {0, 1, 2, 3, 4};  // a = b (tie by index), c = zero, e
  const std::vector<float> sims = {1, 1, 0, 0, -1};
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(top[i].index, order[i]) << i;
    EXPECT_FLOAT_EQ(top[i].similarity, sims[i]) << i;
  }
  auto two = v.nearest(std::vector<float>{0, -1}, 2);
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[0].index, 0);  // a, b, zero, e all 0; c is -1
  EXPECT_EQ(two[1].index, 1);
  EXPECT_FLOAT_EQ(v.nearest(std::vector<float>{1, 1}, 1)[0].similarity, std::sqrt(0.5f));
  EXPECT_TRUE(v.nearest(q, 0).empty());
  for (const auto& n : v.nearest(std::vector<float>{0, 0}, 5)) EXPECT_EQ(n.similarity, 0.0f);
  expect_error(attn::error_kind::usage, [&] { v.nearest(std::vector<float>{1, 2, 3}, 1); },
               {"3 values", "dim 2"});
  expect_error(attn::error_kind::usage, [&] { v.nearest(q, -1); }, {"k must be"});
}

TEST(vectors, moved_from_is_empty_not_a_crash) {
  auto v = small_vectors();
  attn::vectors w = std::move(v);
  EXPECT_EQ(w.size(), 4);
  EXPECT_EQ(v.size(), 0);  // NOLINT(bugprone-use-after-move): that is the point
  EXPECT_FALSE(v.find("the").has_value());
  attn::vectors empty;
  EXPECT_EQ(empty.size(), 0);
}

// ---- the embedded default ----

TEST(vectors, default_is_glove_6b_100d_50k) {
  attn::vectors v = attn::vectors::load_default();
  EXPECT_EQ(v.source(), "<default>");
  EXPECT_EQ(v.format(), attn::vectors_format::attnvec);
  EXPECT_EQ(v.size(), 50000);
  EXPECT_EQ(v.dim(), 100);
  EXPECT_EQ(v.word(0), "the");
  EXPECT_TRUE(v.find("bank").has_value());
  EXPECT_FALSE(v.find("a").has_value());  // the wink-embeddings set leaves it out
  // No number has a row (the wink set dropped them); each reads as the number words' mean.
  EXPECT_FALSE(v.find("1990").has_value());
  EXPECT_FALSE(v.find("2").has_value());
  ASSERT_TRUE(v.lookup("1990").has_value());
  EXPECT_EQ(v.lookup("1990")->data(), v.lookup("3.5")->data());
  EXPECT_TRUE(v.warnings().empty());
  auto king = v.find("king");
  ASSERT_TRUE(king.has_value());
  auto top = v.nearest(v.vector(*king), 10);
  ASSERT_EQ(top.size(), 10u);
  EXPECT_EQ(top[0].index, *king);
  EXPECT_NEAR(top[0].similarity, 1.0f, 1e-6f);
  EXPECT_TRUE(std::any_of(top.begin(), top.end(),
                          [&](const attn::neighbor& n) { return v.word(n.index) == "queen"; }));
}

// ---- malformed files ----

TEST_F(vectors_files, error_empty_file) {
  expect_input_error([&] { attn::vectors::load(write("empty.txt", "")); }, {"empty file"});
  expect_input_error([&] { attn::vectors::load(write("blank.txt", "\xEF\xBB\xBF \n\r\n")); },
                     {"empty file"});
}

TEST_F(vectors_files, error_missing_file_and_directory) {
  expect_input_error([&] { attn::vectors::load((dir_ / "nope.txt").string()); },
                     {"nope.txt", "cannot open"});
  expect_input_error([&] { attn::vectors::load(dir_.string()); }, {"directory"});
}

TEST_F(vectors_files, error_ragged_row) {
  const std::string path = write("ragged.txt", "a 1 2 3\nb 1 2\n");
  expect_input_error([&] { attn::vectors::load(path); },
                     {path, "ragged row: expected 3 values, got 2"}, "line 2");
  expect_input_error([&] { attn::vectors::load(write("long.txt", "a 1 2\n\nb 1 2 3\n")); },
                     {"ragged row: expected 2 values, got 3"}, "line 3");
  expect_input_error([&] { attn::vectors::load(write("short.vec", "1 3\na 1 2\n")); },
                     {"ragged row: expected 3 values, got 2"}, "line 2");
  expect_input_error([&] { attn::vectors::load(write("word.txt", "a\n")); }, {"no values"},
                     "line 1");
}

TEST_F(vectors_files, error_value_not_a_number) {
  expect_input_error([&] { attn::vectors::load(write("x.txt", "a 1 x 3\n")); },
                     {"value 'x' is not a number"}, "line 1");
  expect_input_error([&] { attn::vectors::load(write("y.txt", "a 1 2\nb 1 2,5\n")); },
                     {"value '2,5' is not a number"}, "line 2");
}

TEST_F(vectors_files, error_nan_and_infinity) {
  expect_input_error([&] { attn::vectors::load(write("nan.txt", "a 1 2\nb nan 2\n")); },
                     {"value 'nan' is not a finite number"}, "line 2");
  expect_input_error([&] { attn::vectors::load(write("inf.txt", "a -inf 2\n")); },
                     {"value '-inf' is not a finite number"}, "line 1");
  const std::string bytes = "1 2\nx " + f32_bytes({1.0f, std::nanf("")});
  expect_input_error([&] { attn::vectors::load(write("nan.bin", bytes)); }, {"not a finite number"},
                     "record 1, byte 10");
}

TEST_F(vectors_files, error_value_overflow) {
  expect_input_error([&] { attn::vectors::load(write("big.txt", "a 1 1e50\n")); },
                     {"value '1e50' is not a finite number"}, "line 1");
  expect_input_error([&] { attn::vectors::load(write("bigger.txt", "a 1 -1e500\n")); },
                     {"value '-1e500' is not a finite number"}, "line 1");
}

TEST_F(vectors_files, error_header_count_too_big) {
  expect_input_error([&] { attn::vectors::load(write("few.vec", "3 2\na 1 2\nb 1 2\n")); },
                     {"truncated: header says 3 words, found 2"});
}

TEST_F(vectors_files, error_header_count_too_small) {
  expect_input_error([&] { attn::vectors::load(write("many.vec", "1 2\na 1 2\nb 1 2\n")); },
                     {"more words than the header says (1)"}, "line 3");
  const std::string bytes = "1 1\nx " + f32_bytes({1}) + "\ny " + f32_bytes({2});
  expect_input_error([&] { attn::vectors::load(write("many.bin", bytes)); },
                     {"more data after the 1 words"}, "byte 11");
}

TEST_F(vectors_files, error_header_overflow) {
  expect_input_error(
      [&] { attn::vectors::load(write("huge.vec", "99999999999999999999 100\na 1\n")); },
      {"header word count '99999999999999999999' is too large"}, "line 1");
  expect_input_error(
      [&] { attn::vectors::load(write("product.vec", "4611686018427387904 4\na 1 2 3 4\n")); },
      {"too many values"}, "line 1");
  expect_input_error([&] { attn::vectors::load(write("zero.vec", "2 0\na\nb\n")); },
                     {"header says 0 dimensions"}, "line 1");
}

TEST_F(vectors_files, error_truncated_binary) {
  // Header 4 bytes; record 1 is "a " + 12 + "\n" (15 bytes), so record 2's values start at 21.
  const std::string bytes = "2 3\n" "a " + f32_bytes({1, 2, 3}) + "\nb " + f32_bytes({1}).substr(0, 3);
  const std::string path = write("cut.bin", bytes);
  expect_input_error([&] { attn::vectors::load(path); },
                     {path, "truncated", "12 bytes of values, 3 are left"}, "record 2, byte 21");
  const std::string missing = "3 1\na " + f32_bytes({1}) + "\nb " + f32_bytes({2}) + "\n";
  expect_input_error([&] { attn::vectors::load(write("short.bin", missing)); },
                     {"truncated: header says 3 words, found 2"}, "record 3, byte 18");
}

TEST_F(vectors_files, error_invalid_utf8_in_word) {
  expect_input_error([&] { attn::vectors::load(write("bad.txt", "ok 1\nb\xFFr 2\n")); },
                     {"invalid UTF-8 in word"}, "line 2");
  expect_input_error([&] { attn::vectors::load(write("overlong.txt", "\xC0\xAF 1\n")); },
                     {"invalid UTF-8 in word"}, "line 1");
  expect_input_error([&] { attn::vectors::load(write("surrogate.txt", "\xED\xA0\x80 1\n")); },
                     {"invalid UTF-8 in word"}, "line 1");
  const std::string bytes = "1 1\n\xE2\x82 " + f32_bytes({1});
  expect_input_error([&] { attn::vectors::load(write("bad.bin", bytes)); },
                     {"invalid UTF-8 in word"}, "record 1, byte 4");
}

TEST_F(vectors_files, error_attnvec_bad_magic) {
  std::string bytes = small_vectors().encode_attnvec();
  bytes[7] = '2';
  expect_input_error([&] { attn::vectors::from_attnvec_bytes(as_bytes(bytes), "m.attnvec"); },
                     {"m.attnvec", "bad magic"}, "byte 0");
  expect_input_error([&] { attn::vectors::load(write("bad.attnvec", bytes)); }, {"bad magic"});
  expect_input_error([&] { attn::vectors::load(write("text.attnvec", "a 1 2\n")); }, {"bad magic"});
}

TEST_F(vectors_files, error_attnvec_truncated) {
  const std::string bytes = small_vectors().encode_attnvec();
  expect_input_error(
      [&] { attn::vectors::load(write("cut.attnvec", bytes.substr(0, bytes.size() - 4))); },
      {"truncated", "4 × 3 values need 48 bytes from byte 128"});
  expect_input_error(
      [&] { attn::vectors::from_attnvec_bytes(as_bytes(bytes.substr(0, 40)), "header"); },
      {"truncated: the header needs 64 bytes, the file has 40"});
  expect_input_error([&] { attn::vectors::load(write("long.attnvec", bytes + "x")); },
                     {"1 bytes after the values"});
}

TEST_F(vectors_files, error_attnvec_count_times_dim_overflows) {
  std::string bytes = small_vectors().encode_attnvec();
  write_u64(bytes, 16, 1ull << 40);
  write_u64(bytes, 24, 1ull << 40);
  expect_input_error([&] { attn::vectors::from_attnvec_bytes(as_bytes(bytes), "o"); },
                     {"count × dim overflows (1099511627776 × 1099511627776)"}, "byte 16");
}

TEST_F(vectors_files, error_attnvec_header_fields) {
  const std::string good = small_vectors().encode_attnvec();
  auto patched = [&](size_t at, uint64_t value, int bytes) {
    std::string out = good;
    for (int i = 0; i < bytes; ++i) out[at + static_cast<size_t>(i)] = static_cast<char>(value >> (8 * i));
    return out;
  };
  auto load = [](const std::string& bytes) {
    return [bytes] { attn::vectors::from_attnvec_bytes(as_bytes(bytes), "f"); };
  };
  expect_input_error(load(patched(8, 2, 4)), {"unsupported .attnvec version 2"}, "byte 8");
  expect_input_error(load(patched(12, 3, 4)), {"unknown dtype 3"}, "byte 12");
  expect_input_error(load(patched(16, 0, 8)), {"no words"}, "byte 16");
  expect_input_error(load(patched(24, 0, 8)), {"dim is 0"}, "byte 24");
  expect_input_error(load(patched(32, 8, 8)), {"word table offset 8"}, "byte 32");
  expect_input_error(load(patched(40, 1000, 8)), {"runs past the end"}, "byte 40");
  expect_input_error(load(patched(48, 100, 8)), {"not a multiple of 64"}, "byte 48");
  expect_input_error(load(patched(48, 64, 8)), {"overlaps the word table"}, "byte 48");
  expect_input_error(load(patched(56, 1, 8)), {"reserved"}, "byte 56");
  // The table holds "the\n,\nbank\nriver\n": 4 bytes keep only "the\n".
  expect_input_error(load(patched(40, 4, 8)), {"holds 1 words, the header says 4"}, "byte 68");
  // 16 bytes leave "river" without its '\n'.
  expect_input_error(load(patched(40, 16, 8)), {"holds 3 words"}, "byte 75");
  std::string bad_word = good;
  bad_word[64] = '\xFF';
  expect_input_error(load(bad_word), {"invalid UTF-8 in word"}, "word 1, byte 64");
  std::string empty_word = good;
  empty_word[68] = '\n';  // "the\n\n…": word 2 is empty
  expect_input_error(load(empty_word), {"word 2 is empty"}, "byte 68");
}

TEST_F(vectors_files, attnvec_duplicates_stay_but_are_not_indexed) {
  std::string bytes = small_vectors().encode_attnvec();
  bytes.replace(68, 13, "b\nb\nlongword\n");  // the same 17 bytes: "the\nb\nb\nlongword\n"
  attn::vectors v = attn::vectors::from_attnvec_bytes(as_bytes(bytes), "d");
  EXPECT_EQ(v.size(), 4);
  EXPECT_EQ(v.find("b"), 1);
  EXPECT_EQ(v.word(2), "b");
  ASSERT_EQ(v.warnings().size(), 1u);
  EXPECT_NE(v.warnings()[0].find("duplicate word 'b' at word 3"), std::string::npos)
      << v.warnings()[0];
}

}  // namespace
