// The lines of a text file, plain or compressed, read a block at a time so that a corpus larger
// than memory streams with flat memory. `.xz` (liblzma) and `.gz` (zlib) are recognised by their
// first bytes, not their names, and may hold several concatenated streams (as `xz -T` and
// `cat a.gz b.gz` make). Offsets count bytes of the decompressed text, so a saved position means
// the same place whichever way the file is stored; seeking back in a compressed file reads it
// again from its start (training seeks once, on --resume).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace attn::io {

enum class text_compression { none, xz, gzip };

class text_lines {
 public:
  // An input error naming the file when it cannot be opened or is not a regular file or pipe.
  explicit text_lines(std::string path);
  ~text_lines();
  text_lines(const text_lines&) = delete;
  text_lines& operator=(const text_lines&) = delete;

  // The next line without its '\n' (a final line without one counts); false at the end.
  // Damaged compressed data is an input error naming the file and the compressed byte.
  bool next(std::string& line);
  // Decompressed bytes before the next line.
  int64_t offset() const { return offset_; }
  // Back to a decompressed offset that begins a line (one offset() returned).
  void seek(int64_t offset);

  text_compression compression() const;
  const std::string& path() const { return path_; }

 private:
  class decoder;  // plain, xz or gzip bytes from the file
  bool fill();    // more decompressed bytes into buffer_; false at the end

  std::string path_;
  std::unique_ptr<decoder> decoder_;
  std::string buffer_;  // decompressed bytes not yet returned, from begin_
  size_t begin_ = 0;
  int64_t offset_ = 0;
  bool ended_ = false;
};

}  // namespace attn::io
