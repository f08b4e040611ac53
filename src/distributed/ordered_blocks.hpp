// Records made by all ranks in turn and written by rank 0 in input order (attn-mpi embed).
// Block b of the input is made by rank b mod K. A rank hands each of its blocks to rank 0 and
// waits for rank 0's answer before it makes the next, so no rank runs more than one block ahead
// of the writer (memory stays flat), and the end of the input or an error, met by rank 0 in
// block order, stops every rank: rank 0 collects the one block each other rank still has in
// hand and answers it with the outcome.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "attn/error.hpp"

namespace attn::dist {

struct block_message {
  enum class kind { records, end, failed } what = kind::records;
  std::string bytes;             // records: the block's records, in order
  std::optional<error> failure;  // failed: the error, as rank 0 will report it
  std::vector<std::string> warnings;  // the block's warnings, printed by rank 0 in input order
};

// Rank 0's answer to a block: go on with the next one, or stop (and how the run ended).
enum class writer_answer { go_on = 0, done = 1, failed_usage = 2, failed_input = 3 };

// A rank other than 0: hands a block to rank 0 and returns its answer.
writer_answer hand_over(const block_message& message);

// Rank 0: the next block of rank `from`, and the answer to it.
block_message take_from(int from);
void answer(int to, writer_answer a);

}  // namespace attn::dist
