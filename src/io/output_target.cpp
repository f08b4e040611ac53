// attn::resolve_output (attn/file_roles.hpp): where an output path leads, before anything is written.
#include "attn/file_roles.hpp"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "attn/error.hpp"

namespace attn {

namespace {

// What a file is, for the message that refuses it.
const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// The temporary goes beside the file and is renamed over it: its directory must exist and take
// new files.
void check_directory(const std::string& path, const std::string& file) {
  const std::filesystem::path dir = std::filesystem::path(file).parent_path();
  const std::string d = dir.empty() ? "." : dir.string();
  struct stat st {};
  if (::stat(d.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw_input(path, fmt::format("cannot write: directory {} does not exist", d));
  if (::access(d.c_str(), W_OK) != 0)
    throw_input(path, fmt::format("cannot write: directory {}: {}", d, std::strerror(errno)));
}

}  // namespace

output_target resolve_output(const std::string& path) {
  namespace fs = std::filesystem;
  // What the path finally names, links followed by the kernel.
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) return {path, true};
    if (!S_ISREG(st.st_mode))
      throw_input(path, fmt::format("cannot write: it is {}", kind_of(st.st_mode)));
    // /dev/stdout, /dev/fd/N and /proc/self/fd/N redirected to a file: written through the
    // descriptor the shell opened, never renamed over (their links name no directory entry).
    if (path.starts_with("/dev/") || path.starts_with("/proc/")) return {path, true};
    if (::access(path.c_str(), W_OK) != 0)
      throw_input(path, fmt::format("cannot write: {}", std::strerror(errno)));
    std::error_code ec;
    const fs::path real = fs::canonical(path, ec);  // a link's target is what gets replaced
    if (ec) throw_input(path, fmt::format("cannot write: {}", ec.message()));
    check_directory(path, real.string());
    return {real.string(), false};
  }
  if (errno != ENOENT) throw_input(path, fmt::format("cannot write: {}", std::strerror(errno)));
  // A new file, or a link to one not made yet: follow the links to the name to create (the
  // kernel gives up after 40).
  std::string at = path;
  for (int hops = 0; hops <= 40; ++hops) {
    struct stat link {};
    if (::lstat(at.c_str(), &link) != 0 || !S_ISLNK(link.st_mode)) {
      check_directory(path, at);
      return {at, false};
    }
    std::error_code ec;
    const fs::path target = fs::read_symlink(at, ec);
    if (ec) throw_input(path, fmt::format("cannot write: {}", ec.message()));
    at = target.is_absolute() ? target.string() : (fs::path(at).parent_path() / target).string();
  }
  throw_input(path, "cannot write: too many levels of symbolic links");
}

}  // namespace attn
