#include "staged_output.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "attn/error.hpp"
#include "output_target.hpp"

namespace attn::cli {

namespace {
[[noreturn]] void fail(const std::string& path) {
  throw_input(path, fmt::format("cannot write: {}", std::strerror(errno)));
}
}  // namespace

staged_output::staged_output(std::string path) : path_(std::move(path)) {
  if (path_ == "-") {
    file_ = stdout;
    return;
  }
  const output_target target = resolve_output(path_);
  target_ = target.path;
  if (target.direct) {
    file_ = std::fopen(target_.c_str(), "wb");
    if (file_ == nullptr) fail(path_);
    return;
  }
  tmp_ = fmt::format("{}.tmp-{}", target_, getpid());
  registered_ = std::make_unique<temporary_file>(tmp_);
  file_ = std::fopen(tmp_.c_str(), "wb");
  if (file_ == nullptr) fail(path_);
}

staged_output::~staged_output() {
  if (committed_ || file_ == stdout || file_ == nullptr) return;
  std::fclose(file_);
  if (!tmp_.empty()) std::remove(tmp_.c_str());
}

void staged_output::write(std::string_view bytes) {
  if (std::fwrite(bytes.data(), 1, bytes.size(), file_) != bytes.size())
    fail(file_ == stdout ? "<stdout>" : path_);
}

void staged_output::flush() {
  if (std::fflush(file_) != 0) fail(file_ == stdout ? "<stdout>" : path_);
}

void staged_output::commit() {
  if (file_ == stdout) {
    if (std::fflush(stdout) != 0) fail("<stdout>");
    committed_ = true;
    return;
  }
  std::FILE* f = file_;
  file_ = nullptr;  // closed below whatever happens; the destructor then only removes tmp_
  if (tmp_.empty()) {  // written through
    if (std::fclose(f) != 0) fail(path_);
    committed_ = true;
    return;
  }
  if (std::fclose(f) != 0 || std::rename(tmp_.c_str(), target_.c_str()) != 0) {
    const int saved = errno;
    std::remove(tmp_.c_str());
    errno = saved;
    fail(path_);
  }
  committed_ = true;
}

}  // namespace attn::cli
