// Where an output path leads: the library's (attn/file_roles.hpp), under the CLI's names.
#pragma once

#include "attn/file_roles.hpp"

namespace attn::cli {

using attn::output_target;
using attn::resolve_output;

}  // namespace attn::cli
