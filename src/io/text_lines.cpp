#include "io/text_lines.hpp"

#include <fmt/format.h>
#include <lzma.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "attn/error.hpp"
#include "io/read_file.hpp"

namespace attn::io {

namespace {
constexpr size_t in_block = size_t{1} << 16, out_block = size_t{1} << 18;
}  // namespace

// The file's bytes, decompressed when they are xz or gzip. The kind is told by the first bytes:
// FD 37 7A 58 5A 00 (xz) and 1F 8B (gzip); anything else is plain text.
class text_lines::decoder {
 public:
  explicit decoder(const std::string& path) : path_(path) {
    open();
    peek_kind();
  }
  ~decoder() { end_codec(); }
  decoder(const decoder&) = delete;
  decoder& operator=(const decoder&) = delete;

  text_compression kind() const { return kind_; }

  // Up to n decompressed bytes into out; 0 only at the end of the text.
  size_t read(char* out, size_t n) {
    if (kind_ == text_compression::none) {
      if (in_pos_ == in_len_ && !refill()) return 0;
      const size_t take = std::min(n, in_len_ - in_pos_);
      std::memcpy(out, in_.data() + in_pos_, take);
      in_pos_ += take;
      return take;
    }
    return kind_ == text_compression::xz ? read_xz(out, n) : read_gzip(out, n);
  }

  // Back to the first byte: reopened (a pipe cannot go back).
  void restart() {
    end_codec();
    file_.reset();
    in_pos_ = in_len_ = 0;
    consumed_ = 0;
    at_eof_ = done_ = false;
    open();
    peek_kind();
  }

 private:
  void open() {
    file_ = std::make_unique<input_file>(path_);
    struct stat info {};
    seekable_ = ::fstat(file_->fd(), &info) == 0 && S_ISREG(info.st_mode);
    if (!seekable_ && started_)
      throw_input(path_, "cannot go back in a pipe to resume from a saved position");
    started_ = true;
  }

  // More compressed (or plain) bytes into in_; false at the end of the file.
  bool refill() {
    if (at_eof_) return false;
    if (in_pos_ < in_len_) return true;
    in_.resize(in_block);
    for (;;) {
      const ssize_t got = ::read(file_->fd(), in_.data(), in_.size());
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) throw_input(path_, fmt::format("cannot read: {}", std::strerror(errno)));
      consumed_ += in_len_;
      in_pos_ = 0;
      in_len_ = static_cast<size_t>(got);
      if (got == 0) at_eof_ = true;
      return got > 0;
    }
  }

  void peek_kind() {
    refill();
    const auto* p = in_.data() + in_pos_;
    const size_t n = in_len_ - in_pos_;
    static const unsigned char xz_magic[] = {0xFD, '7', 'z', 'X', 'Z', 0x00};
    if (n >= 6 && std::memcmp(p, xz_magic, 6) == 0) {
      kind_ = text_compression::xz;
      xz_ = LZMA_STREAM_INIT;
      // Concatenated streams, and as much memory as the file's dictionary asks.
      if (lzma_stream_decoder(&xz_, UINT64_MAX, LZMA_CONCATENATED) != LZMA_OK)
        throw_input(path_, "cannot start the xz decoder");
    } else if (n >= 2 && p[0] == 0x1F && p[1] == 0x8B) {
      kind_ = text_compression::gzip;
      gz_ = {};
      if (inflateInit2(&gz_, 15 + 16) != Z_OK) throw_input(path_, "cannot start the gzip decoder");
    } else {
      kind_ = text_compression::none;
    }
  }

  void end_codec() {
    if (kind_ == text_compression::xz) lzma_end(&xz_);
    if (kind_ == text_compression::gzip) inflateEnd(&gz_);
    kind_ = text_compression::none;
  }

  [[noreturn]] void damaged(const char* format, const std::string& why) const {
    throw_input(path_, fmt::format("{} data is damaged or truncated ({})", format, why),
                fmt::format("compressed byte {}", consumed_ + in_pos_));
  }

  size_t read_xz(char* out, size_t n) {
    if (done_) return 0;
    xz_.next_out = reinterpret_cast<uint8_t*>(out);
    xz_.avail_out = n;
    while (xz_.avail_out == n) {
      if (in_pos_ == in_len_) refill();
      xz_.next_in = in_.data() + in_pos_;
      xz_.avail_in = in_len_ - in_pos_;
      const lzma_ret ret = lzma_code(&xz_, at_eof_ ? LZMA_FINISH : LZMA_RUN);
      in_pos_ = in_len_ - xz_.avail_in;
      if (ret == LZMA_STREAM_END) {
        done_ = true;
        break;
      }
      if (ret != LZMA_OK) damaged("xz", fmt::format("liblzma code {}", static_cast<int>(ret)));
    }
    return n - xz_.avail_out;
  }

  size_t read_gzip(char* out, size_t n) {
    if (done_) return 0;
    gz_.next_out = reinterpret_cast<Bytef*>(out);
    gz_.avail_out = static_cast<uInt>(n);
    while (gz_.avail_out == n) {
      if (in_pos_ == in_len_ && !refill()) {
        if (!between_members_) damaged("gzip", "it ends inside a member");
        done_ = true;
        break;
      }
      gz_.next_in = in_.data() + in_pos_;
      gz_.avail_in = static_cast<uInt>(in_len_ - in_pos_);
      const int ret = inflate(&gz_, Z_NO_FLUSH);
      in_pos_ = in_len_ - gz_.avail_in;
      between_members_ = false;
      if (ret == Z_STREAM_END) {
        // Another member may follow (cat a.gz b.gz); its header starts a fresh inflate.
        if (inflateReset(&gz_) != Z_OK) damaged("gzip", "cannot restart");
        between_members_ = true;
        continue;
      }
      if (ret != Z_OK) damaged("gzip", gz_.msg != nullptr ? gz_.msg : fmt::format("zlib code {}", ret));
    }
    return n - gz_.avail_out;
  }

  std::string path_;
  std::unique_ptr<input_file> file_;
  bool seekable_ = false, started_ = false;
  std::vector<unsigned char> in_;
  size_t in_pos_ = 0, in_len_ = 0;
  uint64_t consumed_ = 0;  // compressed bytes before in_
  bool at_eof_ = false, done_ = false, between_members_ = false;
  text_compression kind_ = text_compression::none;
  lzma_stream xz_ = LZMA_STREAM_INIT;
  z_stream gz_ = {};
};

text_lines::text_lines(std::string path)
    : path_(std::move(path)), decoder_(std::make_unique<decoder>(path_)) {}

text_lines::~text_lines() = default;

text_compression text_lines::compression() const { return decoder_->kind(); }

bool text_lines::fill() {
  if (ended_) return false;
  if (begin_ > 0) {  // drop what was returned, keep the partial line
    buffer_.erase(0, begin_);
    begin_ = 0;
  }
  const size_t old = buffer_.size();
  buffer_.resize(old + out_block);
  const size_t got = decoder_->read(buffer_.data() + old, out_block);
  buffer_.resize(old + got);
  if (got == 0) ended_ = true;
  return got > 0;
}

bool text_lines::next(std::string& line) {
  size_t searched = begin_;
  for (;;) {
    const size_t newline = buffer_.find('\n', searched);
    if (newline != std::string::npos) {
      line.assign(buffer_, begin_, newline - begin_);
      offset_ += static_cast<int64_t>(newline - begin_ + 1);
      begin_ = newline + 1;
      return true;
    }
    if (buffer_.size() - begin_ > max_stream_bytes)
      throw_input(path_, fmt::format("a line longer than {} bytes", max_stream_bytes),
                  fmt::format("byte {}", offset_));
    searched = buffer_.size() - begin_;  // fill() moves the unread part to the front
    if (!fill()) {
      if (begin_ == buffer_.size()) return false;
      line.assign(buffer_, begin_, std::string::npos);  // a last line without '\n'
      offset_ += static_cast<int64_t>(buffer_.size() - begin_);
      begin_ = buffer_.size();
      return true;
    }
    searched += begin_;
  }
}

void text_lines::seek(int64_t offset) {
  const int64_t buffered_from = offset_ - static_cast<int64_t>(begin_);
  if (offset >= buffered_from && offset <= offset_) {
    // Still in the buffer (the line just read, when a reader goes back to its start).
    begin_ -= static_cast<size_t>(offset_ - offset);
    offset_ = offset;
    return;
  }
  if (offset < buffered_from) {  // further back: from the start again
    decoder_->restart();
    buffer_.clear();
    begin_ = 0;
    offset_ = 0;
    ended_ = false;
  }
  // Forward from here, a line at a time (offsets saved by offset() begin lines).
  std::string skipped;
  while (offset_ < offset)
    if (!next(skipped)) throw_input(path_, "the file ends before a saved position (has it changed?)");
  if (offset_ != offset)
    throw_input(path_, "a saved position is not at the start of a line (has the file changed?)");
}

}  // namespace attn::io
