// The digest attn-mpi's ranks compare their copies of an input by: the same bytes give the same
// hash however they are fed, and any one changed, added or dropped byte changes it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "distributed/content_digest.hpp"

namespace attn::dist {
namespace {

uint64_t hash_of(const std::string& bytes, size_t piece) {
  content_hash h;
  for (size_t i = 0; i < bytes.size(); i += piece)
    h.update(bytes.data() + i, std::min(piece, bytes.size() - i));
  return h.value();
}

// Bytes that are not a pattern a weak hash would map to itself.
std::string some_bytes(size_t n) {
  std::string s(n, '\0');
  uint32_t x = 12345;
  for (char& c : s) c = static_cast<char>((x = x * 1103515245u + 12345u) >> 24);
  return s;
}

TEST(ContentDigest, TheSameBytesInAnyPiecesGiveTheSameHash) {
  for (size_t n : {0, 1, 31, 32, 33, 100, 1000}) {
    const std::string bytes = some_bytes(n);
    const uint64_t whole = hash_of(bytes, std::max<size_t>(n, 1));
    for (size_t piece : {1, 3, 7, 31, 32, 33, 64})
      EXPECT_EQ(hash_of(bytes, piece), whole) << n << " bytes in pieces of " << piece;
  }
}

TEST(ContentDigest, EveryChangedByteChangesTheHash) {
  // Every position of 100 bytes (three full blocks of 32 and a tail of 4), each flipped in one
  // bit: 800 hashes, all different from each other and from the original.
  const std::string bytes = some_bytes(100);
  std::set<uint64_t> seen{hash_of(bytes, 100)};
  for (size_t i = 0; i < bytes.size(); ++i)
    for (int bit = 0; bit < 8; ++bit) {
      std::string changed = bytes;
      changed[i] = static_cast<char>(changed[i] ^ (1 << bit));
      EXPECT_TRUE(seen.insert(hash_of(changed, 100)).second) << "byte " << i << ", bit " << bit;
    }
}

TEST(ContentDigest, TheLengthCounts) {
  // Zero bytes added or dropped, and a file cut at a block boundary, are differences too.
  std::set<uint64_t> seen;
  for (size_t n = 0; n <= 70; ++n)
    EXPECT_TRUE(seen.insert(hash_of(std::string(n, '\0'), 7)).second) << n;
  const std::string bytes = some_bytes(96);
  EXPECT_NE(hash_of(bytes, 96), hash_of(bytes.substr(0, 64), 64));
}

TEST(ContentDigest, AFileIsReadInChunks) {
  const auto path =
      std::filesystem::temp_directory_path() / ("attn_test_digest_" + std::to_string(::getpid()));
  const std::string bytes = some_bytes((size_t{1} << 20) * 2 + 5);  // two chunks and a bit
  {
    std::ofstream out(path, std::ios::binary);
    out << bytes;
  }
  const file_digest d = digest_file(path.string());
  std::filesystem::remove(path);
  ASSERT_TRUE(d.readable) << d.problem;
  EXPECT_EQ(d.size, bytes.size());
  EXPECT_EQ(d.hash, hash_of(bytes, 4096));
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(d.hash));
  EXPECT_EQ(d.describe(), std::to_string(bytes.size()) + " bytes, hash " + hex);
}

TEST(ContentDigest, AMissingFileSaysWhy) {
  const file_digest d = digest_file("/nonexistent/attn_test_digest");
  EXPECT_FALSE(d.readable);
  EXPECT_EQ(d.describe(), "cannot open: No such file or directory");
}

}  // namespace
}  // namespace attn::dist
