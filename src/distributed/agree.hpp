// Errors that every rank agrees on. Rank 0 alone reads the inputs; when that fails, the other
// ranks must fail with it rather than wait for data that never comes. on_root runs a step on
// rank 0 and hands its outcome to every rank: all return, or all throw the same attn::error
// (which attn-mpi's rank 0 alone prints, so the user sees one line).
#pragma once

#include <functional>

namespace attn::dist {

void on_root(const std::function<void()>& step);

// Runs step on every rank (each reading its own files); when it throws on any rank, every rank
// throws the error of the lowest such rank.
void on_every_rank(const std::function<void()>& step);

}  // namespace attn::dist
