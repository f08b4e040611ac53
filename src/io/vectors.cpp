// attn::vectors: words, their index, and count × dim float32 values that live either in memory we
// own or, for float32 .attnvec files, right in the mapped file or the embedded bytes (so a large
// file loads without copying its values).
#include "attn/vectors.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "attn/error.hpp"
#include "core/half.hpp"
#include "core/utf8.hpp"
#include "io/attnvec_format.hpp"
#include "io/read_file.hpp"
#include "io/vectors_readers.hpp"
#include "text/number_token.hpp"

namespace attn {

namespace io {

bool is_valid_utf8(std::string_view text) { return first_invalid_utf8(text) == std::string_view::npos; }

}  // namespace io

namespace {

// A whole file's bytes: mapped read-only when possible, otherwise read into memory (pipes,
// special files, file systems that refuse mmap). `owner` keeps them alive.
struct file_bytes {
  std::shared_ptr<const void> owner;
  std::span<const unsigned char> bytes;
};

file_bytes read_whole_file(const std::string& path) {
  const input_file file(path);  // a directory or a device is refused (io/read_file.hpp)
  const int fd = file.fd();
  struct stat info {};
  if (::fstat(fd, &info) != 0) throw_input(path, fmt::format("cannot stat: {}", std::strerror(errno)));
  if (S_ISREG(info.st_mode) && info.st_size > 0) {
    const auto length = static_cast<size_t>(info.st_size);
    void* address = ::mmap(nullptr, length, PROT_READ, MAP_PRIVATE, fd, 0);
    if (address != MAP_FAILED) {
      std::shared_ptr<const void> owner(address, [length](const void* a) {
        ::munmap(const_cast<void*>(a), length);
      });
      return {std::move(owner), {static_cast<const unsigned char*>(address), length}};
    }
  }
  auto buffer = std::make_shared<std::vector<unsigned char>>();
  unsigned char chunk[1 << 16];
  for (;;) {
    const ssize_t got = ::read(fd, chunk, sizeof chunk);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw_input(path, fmt::format("cannot read: {}", std::strerror(errno)));
    if (got == 0) break;
    buffer->insert(buffer->end(), chunk, chunk + got);
    if (buffer->size() > max_stream_bytes)
      throw_input(path, fmt::format("more than {} bytes from a stream: too large", max_stream_bytes));
  }
  std::span<const unsigned char> bytes(*buffer);
  return {std::move(buffer), bytes};
}

uint32_t load_u32_le(const unsigned char* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
         static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
}

void put_le(std::string& out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xFF));
}

// Accessors on a moved-from vectors see an empty one instead of a null pointer.
template <class impl_type>
const impl_type& or_empty(const std::unique_ptr<impl_type>& p) {
  static const impl_type empty;
  return p ? *p : empty;
}

}  // namespace

struct vectors::impl {
  std::string source;
  vectors_format format = vectors_format::attnvec;
  int64_t count = 0, dim = 0;
  std::shared_ptr<const void> keep_alive;  // the mapping the views below may point into
  std::string word_storage;                // the words, when we own them
  std::vector<std::string_view> words;
  std::unordered_map<std::string_view, int64_t> index;
  std::vector<float> owned;
  const float* values = nullptr;  // owned.data(), or float32 values inside the mapping/bytes
  std::vector<std::string> warnings;
  mutable std::once_flag norms_once;
  mutable std::vector<float> norms;  // L2 norm of each row, computed on the first nearest()
  mutable std::once_flag number_once;
  mutable std::vector<float> number;  // what numbers the table lacks read as; empty: none

  // Takes words (views that need not outlive the call) and their rows. A repeated word keeps
  // its first row; later rows are dropped and reported as "<label> N".
  void adopt_values(const std::vector<std::string_view>& in_words, int64_t d,
                    std::vector<float> rows, const std::string& label) {
    size_t total = 0;
    for (auto w : in_words) total += w.size();
    word_storage.reserve(total);  // no reallocation below: the views stay valid
    for (auto w : in_words) word_storage.append(w);
    const size_t width = static_cast<size_t>(d);
    io::duplicate_log duplicates(source);
    words.reserve(in_words.size());
    index.reserve(in_words.size());
    size_t offset = 0, kept = 0;
    for (size_t i = 0; i < in_words.size(); ++i) {
      const std::string_view w(word_storage.data() + offset, in_words[i].size());
      offset += w.size();
      if (!index.emplace(w, static_cast<int64_t>(kept)).second) {
        duplicates.add(w, fmt::format("{} {}", label, i + 1));
        continue;
      }
      if (kept != i)
        std::copy(rows.begin() + static_cast<std::ptrdiff_t>(i * width),
                  rows.begin() + static_cast<std::ptrdiff_t>((i + 1) * width),
                  rows.begin() + static_cast<std::ptrdiff_t>(kept * width));
      words.push_back(w);
      ++kept;
    }
    rows.resize(kept * width);
    owned = std::move(rows);
    values = owned.data();
    count = static_cast<int64_t>(kept);
    dim = d;
    for (auto& w : duplicates.finish()) warnings.push_back(std::move(w));
  }

  // Uses a checked .attnvec in place: words always, float32 values when the host is
  // little-endian and they are aligned; float16 values are widened once here.
  void adopt_attnvec(io::attnvec_contents c, std::shared_ptr<const void> owner) {
    format = vectors_format::attnvec;
    keep_alive = std::move(owner);
    count = c.count;
    dim = c.dim;
    words = std::move(c.words);
    const size_t n = static_cast<size_t>(count) * static_cast<size_t>(dim);
    if (c.dtype == attnvec::dtype_f32) {
      if (std::endian::native == std::endian::little &&
          reinterpret_cast<std::uintptr_t>(c.values) % alignof(float) == 0) {
        values = reinterpret_cast<const float*>(c.values);
      } else {
        owned.resize(n);
        for (size_t i = 0; i < n; ++i) owned[i] = std::bit_cast<float>(load_u32_le(c.values + 4 * i));
        values = owned.data();
      }
    } else {
      owned.resize(n);
      for (size_t i = 0; i < n; ++i) {
        const auto h = static_cast<uint16_t>(c.values[2 * i] | c.values[2 * i + 1] << 8);
        owned[i] = half_to_float(h);
      }
      values = owned.data();
    }
    // A repeated word stays in place (the values are not ours to compact) but is not indexed.
    io::duplicate_log duplicates(source);
    index.reserve(words.size());
    for (size_t i = 0; i < words.size(); ++i)
      if (!index.emplace(words[i], static_cast<int64_t>(i)).second)
        duplicates.add(words[i], fmt::format("word {}", i + 1));
    warnings = duplicates.finish();
  }

  const std::vector<float>& row_norms() const {
    std::call_once(norms_once, [this] {
      norms.resize(static_cast<size_t>(count));
      const auto d = static_cast<size_t>(dim);
      for (size_t i = 0; i < norms.size(); ++i) {
        const float* row = values + i * d;
        double sum = 0;
        for (size_t j = 0; j < d; ++j) sum += static_cast<double>(row[j]) * row[j];
        norms[i] = static_cast<float>(std::sqrt(sum));
      }
    });
    return norms;
  }

  // The mean of the number words' rows, computed on the first number looked up. A number's
  // meaning is mostly "a quantity", which the words for the small numbers share.
  const std::vector<float>& number_vector() const {
    std::call_once(number_once, [this] {
      const auto d = static_cast<size_t>(dim);
      std::vector<double> sum(d, 0.0);
      int found = 0;
      for (std::string_view w : {"zero", "one", "two", "three", "four", "five", "six", "seven",
                                 "eight", "nine", "ten"}) {
        const auto it = index.find(w);
        if (it == index.end()) continue;
        const float* row = values + static_cast<size_t>(it->second) * d;
        for (size_t j = 0; j < d; ++j) sum[j] += row[j];
        ++found;
      }
      if (found == 0) return;
      number.resize(d);
      for (size_t j = 0; j < d; ++j) number[j] = static_cast<float>(sum[j] / found);
    });
    return number;
  }

  void check_index(int64_t i) const {
    if (i < 0 || i >= count)
      throw_usage(fmt::format("word index {} is out of range ({} holds {} words)", i, source, count));
  }
};

vectors::vectors() : impl_(std::make_unique<impl>()) {}
vectors::~vectors() = default;
vectors::vectors(vectors&&) noexcept = default;
vectors& vectors::operator=(vectors&&) noexcept = default;

vectors vectors::load(const std::string& path) {
  // Every command and binding takes a vectors path through here, so "default" means the same
  // everywhere (as "builtin" does for text_model::load); a file of that name is ./default.
  if (path == "default") return load_default();
  file_bytes file = read_whole_file(path);
  if (file.bytes.empty()) throw_input(path, "empty file");
  vectors v;
  v.impl_->source = path;
  const std::string_view text(reinterpret_cast<const char*>(file.bytes.data()), file.bytes.size());
  // The magic decides; the extension only makes a damaged .attnvec report its bad magic
  // instead of failing as a text file.
  if (text.starts_with(std::string_view(attnvec::magic, 7)) || path.ends_with(".attnvec")) {
    v.impl_->adopt_attnvec(io::read_attnvec(file.bytes, path), std::move(file.owner));
    return v;
  }
  io::parsed_vectors parsed = io::parse_word_vectors(text, path);
  v.impl_->format = parsed.format;
  v.impl_->warnings = std::move(parsed.warnings);
  v.impl_->adopt_values(parsed.words, parsed.dim, std::move(parsed.values), "line");
  return v;  // the words were copied: the file can go
}

vectors vectors::from_attnvec_bytes(std::span<const unsigned char> bytes, const std::string& source) {
  vectors v;
  v.impl_->source = source;
  v.impl_->adopt_attnvec(io::read_attnvec(bytes, source), nullptr);
  return v;
}

vectors vectors::from_values(std::vector<std::string> words, int64_t dim, std::vector<float> values) {
  if (dim < 1) throw_usage(fmt::format("word vectors need dim ≥ 1, got {}", dim));
  if (words.empty()) throw_usage("word vectors need at least one word");
  uint64_t expected = 0;
  if (!io::checked_mul(words.size(), static_cast<uint64_t>(dim), expected) ||
      expected != values.size())
    throw_usage(fmt::format("{} words × {} dims do not match {} values", words.size(), dim,
                            values.size()));
  // The same rules as for files, so that any vectors can be written as .attnvec and read back.
  for (size_t i = 0; i < words.size(); ++i) {
    if (words[i].empty()) throw_usage(fmt::format("word {} is empty", i + 1));
    if (words[i].find('\n') != std::string::npos)
      throw_usage(fmt::format("word {} contains a line break", i + 1));
    if (!io::is_valid_utf8(words[i])) throw_usage(fmt::format("word {} is not valid UTF-8", i + 1));
  }
  vectors v;
  v.impl_->source = "<values>";
  v.impl_->format = vectors_format::attnvec;  // attn's own in-memory form; no file was read
  const std::vector<std::string_view> views(words.begin(), words.end());
  v.impl_->adopt_values(views, dim, std::move(values), "word");
  return v;
}

int64_t vectors::size() const { return or_empty(impl_).count; }
int64_t vectors::dim() const { return or_empty(impl_).dim; }
vectors_format vectors::format() const { return or_empty(impl_).format; }
const std::string& vectors::source() const { return or_empty(impl_).source; }
const std::vector<std::string>& vectors::warnings() const { return or_empty(impl_).warnings; }

std::optional<int64_t> vectors::find(std::string_view word) const {
  const impl& m = or_empty(impl_);
  auto it = m.index.find(word);
  if (it == m.index.end()) return std::nullopt;
  return it->second;
}

std::optional<std::span<const float>> vectors::lookup(std::string_view token) const {
  if (auto i = find(token)) return vector(*i);
  const impl& m = or_empty(impl_);
  if (!text::is_number(token) || m.number_vector().empty()) return std::nullopt;
  return std::span<const float>(m.number_vector());
}

std::string_view vectors::word(int64_t index) const {
  const impl& m = or_empty(impl_);
  m.check_index(index);
  return m.words[static_cast<size_t>(index)];
}

std::span<const float> vectors::vector(int64_t index) const {
  const impl& m = or_empty(impl_);
  m.check_index(index);
  const auto d = static_cast<size_t>(m.dim);
  return {m.values + static_cast<size_t>(index) * d, d};
}

std::vector<neighbor> vectors::nearest(std::span<const float> v, int64_t k) const {
  const impl& m = or_empty(impl_);
  if (static_cast<int64_t>(v.size()) != m.dim)
    throw_usage(fmt::format("nearest: the vector has {} values, {} has dim {}", v.size(), m.source,
                            m.dim));
  if (k < 0) throw_usage(fmt::format("nearest: k must be ≥ 0, got {}", k));
  k = std::min(k, m.count);
  if (k == 0) return {};

  const std::vector<float>& norms = m.row_norms();
  double query_sq = 0;
  for (float x : v) query_sq += static_cast<double>(x) * x;
  const double query_norm = std::sqrt(query_sq);
  const auto d = static_cast<size_t>(m.dim);
  std::vector<neighbor> all(static_cast<size_t>(m.count));
  for (size_t i = 0; i < all.size(); ++i) {
    float similarity = 0;  // a zero vector is similar to nothing
    if (query_norm > 0 && norms[i] > 0) {
      const float* row = m.values + i * d;
      double dot = 0;
      for (size_t j = 0; j < d; ++j) dot += static_cast<double>(v[j]) * row[j];
      // Rounding can step just outside [-1, 1].
      similarity = static_cast<float>(std::clamp(dot / (query_norm * norms[i]), -1.0, 1.0));
    }
    all[i] = {static_cast<int64_t>(i), similarity};
  }
  // Highest first, ties by lower index; NaN (only from NaN in a mapped file) sorts last so the
  // order stays a strict weak one.
  auto before = [](const neighbor& a, const neighbor& b) {
    const bool a_nan = std::isnan(a.similarity), b_nan = std::isnan(b.similarity);
    if (a_nan != b_nan) return b_nan;
    if (!a_nan && a.similarity != b.similarity) return a.similarity > b.similarity;
    return a.index < b.index;
  };
  std::partial_sort(all.begin(), all.begin() + k, all.end(), before);
  all.resize(static_cast<size_t>(k));
  return all;
}

std::string vectors::encode_attnvec(int64_t top, bool float16) const {
  const impl& m = or_empty(impl_);
  if (top < 0) throw_usage(fmt::format("top must be ≥ 0, got {}", top));
  if (m.count == 0) throw_usage("there are no word vectors to write");
  const auto n = static_cast<size_t>(top == 0 ? m.count : std::min(top, m.count));
  const auto d = static_cast<size_t>(m.dim);

  std::string table;
  for (size_t i = 0; i < n; ++i) {
    table.append(m.words[i]);
    table.push_back('\n');
  }
  const uint64_t vectors_offset =
      (attnvec::header_size + table.size() + attnvec::alignment - 1) / attnvec::alignment *
      attnvec::alignment;
  const size_t value_size = float16 ? 2 : 4;

  std::string out;
  out.reserve(vectors_offset + n * d * value_size);
  out.append(attnvec::magic, sizeof attnvec::magic);
  put_le(out, attnvec::version, 4);
  put_le(out, float16 ? attnvec::dtype_f16 : attnvec::dtype_f32, 4);
  put_le(out, n, 8);
  put_le(out, d, 8);
  put_le(out, attnvec::header_size, 8);
  put_le(out, table.size(), 8);
  put_le(out, vectors_offset, 8);
  put_le(out, 0, 8);
  out += table;
  out.resize(vectors_offset, '\0');
  for (size_t i = 0; i < n * d; ++i) {
    const float x = m.values[i];
    if (!float16) {
      put_le(out, std::bit_cast<uint32_t>(x), 4);
      continue;
    }
    const uint16_t h = float_to_half(x);
    if (std::isfinite(x) && (h & 0x7FFFu) == 0x7C00u)
      throw_input(m.source,
                  fmt::format("value {} of word '{}' is too large for float16 (largest 65504); "
                              "store float32",
                              x, m.words[i / d]),
                  fmt::format("word {}", i / d + 1));
    put_le(out, h, 2);
  }
  return out;
}

}  // namespace attn
