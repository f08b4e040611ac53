#include "same_command.hpp"

#include <fmt/format.h>
#include <mpi.h>

#include <optional>

#include "agree.hpp"
#include "attn/error.hpp"
#include "content_digest.hpp"
#include "session.hpp"

namespace attn::dist {

namespace {

// A rank's command: its arguments and, for each input, the digest of its copy ("" otherwise).
struct rank_command {
  std::vector<command_argument> args;
  std::vector<std::string> digests;
};

rank_command this_rank_command(const std::vector<command_argument>& args) {
  rank_command c{args, {}};
  for (const command_argument& a : args)
    c.digests.push_back(a.names_input ? digest_file(a.text).describe() : "");
  return c;
}

// Three fields per argument, each ended by '\0' (which no argument nor digest can hold).
std::string encode(const rank_command& c) {
  std::string bytes;
  for (size_t i = 0; i < c.args.size(); ++i) {
    bytes += c.args[i].names_input ? "f" : "o";
    bytes += '\0' + c.args[i].text + '\0' + c.digests[i] + '\0';
  }
  return bytes;
}

rank_command decode(const std::string& bytes) {
  std::vector<std::string> fields;
  for (size_t begin = 0, end; begin < bytes.size(); begin = end + 1) {
    end = bytes.find('\0', begin);
    if (end == std::string::npos) break;  // (encode ends every field)
    fields.push_back(bytes.substr(begin, end - begin));
  }
  rank_command c;
  for (size_t i = 0; i + 2 < fields.size(); i += 3) {
    c.args.push_back({fields[i + 1], fields[i] == "f"});
    c.digests.push_back(fields[i + 2]);
  }
  return c;
}

rank_command rank0_command(const rank_command& mine) {
  std::string bytes = rank() == 0 ? encode(mine) : "";
  int size = static_cast<int>(bytes.size());
  MPI_Bcast(&size, 1, MPI_INT, 0, MPI_COMM_WORLD);
  bytes.resize(static_cast<size_t>(size));
  MPI_Bcast(bytes.data(), size, MPI_CHAR, 0, MPI_COMM_WORLD);
  return decode(bytes);
}

// The same option, or an input in the same place (its path may differ).
bool same_option(const command_argument& a, const command_argument& b) {
  return a.names_input == b.names_input && (a.names_input || a.text == b.text);
}

bool is_option_name(const command_argument& a) { return !a.names_input && a.text.starts_with("-"); }

std::string joined(const std::vector<command_argument>& args, size_t begin, size_t end) {
  std::string s;
  for (size_t i = begin; i < end; ++i) s += (i > begin ? " " : "") + args[i].text;
  return s;
}

// The arguments that differ between a and b, shown with the option they belong to: the span
// between their common beginning and common end, widened by one argument when it is empty on
// one side ("--causal" given to one rank only shows as '--value v.npy' against '--value v.npy
// --causal'), and to the option name before a value.
std::string option_difference(const std::vector<command_argument>& mine, int me,
                              const std::vector<command_argument>& root) {
  const size_t shorter = std::min(mine.size(), root.size());
  size_t begin = 0, tail = 0;
  while (begin < shorter && same_option(mine[begin], root[begin])) ++begin;
  while (tail < shorter - begin &&
         same_option(mine[mine.size() - 1 - tail], root[root.size() - 1 - tail]))
    ++tail;
  if (begin + tail == shorter && shorter > 0) {  // one side's span is empty: widen it
    if (begin > 0)
      --begin;
    else
      --tail;
  }
  if (begin > 0 && !is_option_name(root[begin]) && is_option_name(root[begin - 1])) --begin;
  return fmt::format("options differ between ranks: rank {} was given '{}', rank 0 '{}'", me,
                     joined(mine, begin, mine.size() - tail),
                     joined(root, begin, root.size() - tail));
}

// The first way this rank's command differs from rank 0's, if any.
std::optional<error> difference(const rank_command& mine, int me, const rank_command& root) {
  bool same_options = mine.args.size() == root.args.size();
  for (size_t i = 0; same_options && i < mine.args.size(); ++i)
    same_options = same_option(mine.args[i], root.args[i]);
  if (!same_options)
    return error(error_kind::input, "", option_difference(mine.args, me, root.args));
  for (size_t i = 0; i < mine.args.size(); ++i) {
    if (mine.digests[i] == root.digests[i]) continue;
    const std::string& path = root.args[i].text;
    const std::string own_path = mine.args[i].text == path ? "" : mine.args[i].text + ", ";
    return error(error_kind::input, path,
                 fmt::format("differs between ranks (rank {}: {}{}; rank 0: {})", me, own_path,
                             mine.digests[i], root.digests[i]));
  }
  return std::nullopt;
}

}  // namespace

void agree_on_command(const std::vector<command_argument>& args) {
  if (ranks() == 1) return;
  const rank_command mine = this_rank_command(args);
  const rank_command root = rank0_command(mine);
  on_every_rank([&] {
    if (std::optional<error> e = difference(mine, rank(), root)) throw *e;
  });
}

}  // namespace attn::dist
