// Where an output path leads. A symbolic link is followed to the file it names (the link itself
// stays a link); a character device or a FIFO (/dev/null, /dev/stdout, a named pipe) is written
// through, as `cat > /dev/null` would; a regular file, or none yet, is written to a temporary
// beside it and renamed into place. Anything else (a directory, a block device, a socket) is
// refused, so attn never replaces a directory entry that is not a regular file.
#pragma once

#include <string>

namespace attn::cli {

struct output_target {
  std::string path;     // the file to write (the link's target for a symbolic link)
  bool direct = false;  // a character device or FIFO: opened and written, never renamed over
};

// An input error naming `path` when it cannot be an output; checks too that a new file's
// directory exists and is writable, so a run fails before its work rather than after.
output_target resolve_output(const std::string& path);

}  // namespace attn::cli
