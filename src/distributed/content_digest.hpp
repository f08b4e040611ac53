// attn-mpi's digests of its inputs: io/content_hash.hpp's, which libattn's checkpoints use too.
#pragma once

#include "io/content_hash.hpp"

namespace attn::dist {

using io::content_hash;
using io::digest_file;
using io::file_digest;

}  // namespace attn::dist
