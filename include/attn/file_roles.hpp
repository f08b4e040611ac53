// The files a command reads and the files it writes, checked before its work: attn's commands
// (cli/file_roles.hpp) and attn.train in Python run this one check, so no output replaces an
// input or another output, whatever path names it.
#pragma once

#include <string>
#include <vector>

namespace attn {

// Where an output path leads. A symbolic link is followed to the file it names (the link itself
// stays a link); a character device or a FIFO (/dev/null, /dev/stdout, a named pipe) is written
// through, as `cat > /dev/null` would; a regular file, or none yet, is written to a temporary
// beside it and renamed into place. Anything else (a directory, a block device, a socket) is
// refused, so attn never replaces a directory entry that is not a regular file.
struct output_target {
  std::string path;     // the file to write (the link's target for a symbolic link)
  bool direct = false;  // a character device or FIFO: opened and written, never renamed over
};

// An input error naming `path` when it cannot be an output; checks too that a new file's
// directory exists and is writable, so a run fails before its work rather than after.
output_target resolve_output(const std::string& path);

// A file and what names it in messages ("--output", "output", "the checkpoint").
struct named_path {
  std::string what, path;
};

// A usage error (nothing touched) when an output names an input or another output — the same
// file by any path: the same device and inode when both exist (hard and symbolic links, "./x"
// and "x"), else the same normalised absolute path; character devices (/dev/null) take any
// number of writers, and "-" is standard input or output. Then each output through
// resolve_output. Empty paths are skipped.
void check_file_roles(const std::vector<named_path>& inputs, const std::vector<named_path>& outputs);

}  // namespace attn
