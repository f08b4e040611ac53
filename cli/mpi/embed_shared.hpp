// attn-mpi embed --batch: the batch loop (batch_records.hpp) with the lines shared among the
// ranks and rank 0 writing every record in input order; the output equals attn embed's byte
// for byte. Every rank calls it together.
#pragma once

#include <string>

#include "batch_records.hpp"

namespace attn::cli {

void shared_batch_loop(const std::string& input, const std::string& output, const batch_plan& plan);

}  // namespace attn::cli
