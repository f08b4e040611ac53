// Every rank's bytes on every rank: data-parallel training swaps its gradient shards with it.
#pragma once

#include <vector>

namespace attn::dist {

// The ranks' buffers (of any sizes), concatenated in rank order, on every rank.
std::vector<char> all_gather(const std::vector<char>& mine);

}  // namespace attn::dist
