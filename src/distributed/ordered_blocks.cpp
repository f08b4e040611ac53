#include "ordered_blocks.hpp"

#include <mpi.h>

#include <cstdint>
#include <limits>

namespace attn::dist {

namespace {

constexpr int block_tag = 7, answer_tag = 8;

// A message as bytes: its kind, the count of its warnings, then length-prefixed strings (the
// warnings, then the records, or the error's kind, file, problem and where).
void put(std::string& out, const std::string& s) {
  const uint64_t n = s.size();
  out.append(reinterpret_cast<const char*>(&n), sizeof n);
  out += s;
}

std::string get(const std::string& in, size_t& at) {
  uint64_t n = 0;
  in.copy(reinterpret_cast<char*>(&n), sizeof n, at);
  at += sizeof n;
  std::string s = in.substr(at, n);
  at += n;
  return s;
}

std::string encode(const block_message& m) {
  std::string out(1, static_cast<char>(m.what));
  const uint64_t warnings = m.warnings.size();
  out.append(reinterpret_cast<const char*>(&warnings), sizeof warnings);
  for (const std::string& w : m.warnings) put(out, w);
  if (m.what == block_message::kind::records) put(out, m.bytes);
  if (m.what == block_message::kind::failed) {
    put(out, m.failure->kind() == error_kind::usage ? "u" : "i");
    put(out, m.failure->file());
    put(out, m.failure->problem());
    put(out, m.failure->where());
  }
  return out;
}

block_message decode(const std::string& in) {
  block_message m;
  m.what = static_cast<block_message::kind>(in.at(0));
  size_t at = 1;
  uint64_t warnings = 0;
  in.copy(reinterpret_cast<char*>(&warnings), sizeof warnings, at);
  at += sizeof warnings;
  for (uint64_t i = 0; i < warnings; ++i) m.warnings.push_back(get(in, at));
  if (m.what == block_message::kind::records) m.bytes = get(in, at);
  if (m.what == block_message::kind::failed) {
    const error_kind k = get(in, at) == "u" ? error_kind::usage : error_kind::input;
    std::string file = get(in, at), problem = get(in, at), where = get(in, at);
    m.failure.emplace(k, file, problem, where);
  }
  return m;
}

}  // namespace

writer_answer hand_over(const block_message& message) {
  std::string bytes = encode(message);
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max())) {
    // Told to rank 0 like any other failure: throwing here would leave it waiting.
    block_message too_big{block_message::kind::failed, "",
                          error(error_kind::input, "", "a block of records over 2 GiB"), {}};
    bytes = encode(too_big);
  }
  MPI_Send(bytes.data(), static_cast<int>(bytes.size()), MPI_CHAR, 0, block_tag, MPI_COMM_WORLD);
  int a = 0;
  MPI_Recv(&a, 1, MPI_INT, 0, answer_tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  return static_cast<writer_answer>(a);
}

block_message take_from(int from) {
  MPI_Status status;
  MPI_Probe(from, block_tag, MPI_COMM_WORLD, &status);
  int size = 0;
  MPI_Get_count(&status, MPI_CHAR, &size);
  std::string bytes(static_cast<size_t>(size), '\0');
  MPI_Recv(bytes.data(), size, MPI_CHAR, from, block_tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  return decode(bytes);
}

void answer(int to, writer_answer a) {
  const int code = static_cast<int>(a);
  MPI_Send(&code, 1, MPI_INT, to, answer_tag, MPI_COMM_WORLD);
}

}  // namespace attn::dist
