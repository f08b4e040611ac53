// A safetensors header as large as the format allows in practice: 300,000 tensors, a 20 MB
// header (the limit is 100 MB). Parsed in linear time this takes well under a second; the
// quadratic parser it replaces needed minutes (20k tensors 6.5 s, 40k 21 s, 300k over 90 s). No
// clock is read here: ctest's TIMEOUT for this binary (tests/CMakeLists.txt) is the bound,
// generous enough for a sanitizer build on a busy machine, out of reach for anything quadratic.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <string>

#include "attn/safetensors.hpp"

namespace {

// n one-element F32 tensors "t000000"… in reverse name order (so neither the file's order nor
// the parser's can be leaned on), tensor i holding the value i, and one metadata key.
std::string many_tensors(int n) {
  std::string header = R"({"__metadata__":{"format":"pt"})";
  for (int i = n - 1; i >= 0; --i)
    header += fmt::format(R"(,"t{:06}":{{"dtype":"F32","shape":[1],"data_offsets":[{},{}]}})", i,
                          4 * i, 4 * i + 4);
  header += "}";
  std::string file;
  for (int s = 0; s < 64; s += 8) file.push_back(static_cast<char>(uint64_t{header.size()} >> s));
  file += header;
  for (int i = 0; i < n; ++i) {
    const auto bits = std::bit_cast<uint32_t>(static_cast<float>(i));
    for (int s = 0; s < 32; s += 8) file.push_back(static_cast<char>(bits >> s));
  }
  return file;
}

TEST(safetensors_scale, a_header_of_300k_tensors_parses_in_linear_time) {
  constexpr int n = 300'000;
  const std::string bytes = many_tensors(n);
  ASSERT_GT(bytes.size(), 20'000'000u);
  const attn::safetensors_file file = attn::parse_safetensors(bytes, "many.safetensors");
  ASSERT_EQ(file.tensors.size(), static_cast<size_t>(n));
  EXPECT_EQ(file.metadata.at("format"), "pt");
  EXPECT_EQ(file.tensors.at("t000000").values()[0], 0.0f);
  EXPECT_EQ(file.tensors.at("t123456").values()[0], 123456.0f);
  EXPECT_EQ(file.tensors.at("t299999").values()[0], 299999.0f);
}

}  // namespace
