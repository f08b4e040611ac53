// attn-mpi embed --batch: the lines shared among the ranks in blocks taken in turn (block b by
// rank b mod K), every rank reading the file itself; rank 0 writes the records in input order
// as they come, so the output is byte for byte that of one process (src/distributed/ordered_blocks.hpp
// has the hand-over). Each rank finds the unknown tokens of its own lines and hands its warnings
// with the block: rank 0 prints them all, in input order, with one process's limit.
#include "embed_shared.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "attn/error.hpp"
#include "distributed/ordered_blocks.hpp"
#include "distributed/session.hpp"
#include "staged_output.hpp"

namespace attn::cli {

namespace {

// Small enough that the ranks take turns often (the writer never waits long for the next
// block), large enough that a hand-over costs little beside the embedding of its lines.
constexpr int64_t lines_per_block = 32;

// The lines of the input file, numbered from 1, CRLF read as LF (as attn embed reads them).
class line_source {
 public:
  explicit line_source(const std::string& path) : path_(path), file_(path, std::ios::binary) {
    if (!file_) throw_input(path, fmt::format("cannot open: {}", std::strerror(errno)));
  }

  // The next line, or false at the end of the input.
  bool next(std::string& text) {
    if (!std::getline(file_, text)) {
      if (file_.bad()) throw_input(path_, fmt::format("cannot read: {}", std::strerror(errno)));
      return false;
    }
    ++line_;
    if (!text.empty() && text.back() == '\r') text.pop_back();
    return true;
  }
  int64_t line() const { return line_; }

 private:
  std::string path_;
  std::ifstream file_;
  int64_t line_ = 0;
};

// The records of block b, made by this rank; no lines means the input ended before it.
// `write` receives each record (the writer writes it, another rank collects it).
template <class Write>
bool make_block(line_source& in, int64_t b, const batch_plan& plan, unknown_tokens& unknown,
                Write&& write) {
  std::string text;
  while (in.line() < b * lines_per_block)  // other ranks' lines
    if (!in.next(text)) return false;
  bool any = false;
  while (in.line() < (b + 1) * lines_per_block && in.next(text)) {
    write(plan.make(text, in.line(), unknown));
    any = true;
  }
  return any;
}

dist::block_message failure_of(const std::exception& e) {
  if (const auto* attn_error = dynamic_cast<const error*>(&e))
    return {dist::block_message::kind::failed, "", *attn_error, {}};
  return {dist::block_message::kind::failed, "", error(error_kind::input, "", e.what()), {}};
}

dist::writer_answer outcome_of(const std::optional<error>& failure) {
  if (!failure) return dist::writer_answer::done;
  return failure->kind() == error_kind::usage ? dist::writer_answer::failed_usage
                                              : dist::writer_answer::failed_input;
}

void write_in_order(const std::string& input, const std::string& output, const batch_plan& plan) {
  const int K = dist::ranks();
  progress_bar quiet(0, "sentences", false);
  unknown_tokens unknown(input, plan.terms, plan.strict, quiet);
  // Opened with the input (block 0 is rank 0's), inside the loop: a failure to create it must
  // end the other ranks too.
  std::optional<staged_output> out;
  std::optional<line_source> in;
  std::optional<error> failure;
  for (int64_t b = 0;; ++b) {
    const int owner = static_cast<int>(b % K);
    bool ended = false;
    try {
      if (owner == 0) {
        if (!in) {
          in.emplace(input);
          out.emplace(output);
          out->write(plan.header);
        }
        ended = !make_block(*in, b, plan, unknown, [&](const std::string& r) { out->write(r); });
      } else {
        dist::block_message m = dist::take_from(owner);
        for (std::string& w : m.warnings) unknown.note(std::move(w));
        if (m.what == dist::block_message::kind::failed) failure = m.failure;
        ended = m.what == dist::block_message::kind::end;
        if (m.what == dist::block_message::kind::records) {
          out->write(m.bytes);
          dist::answer(owner, dist::writer_answer::go_on);
          continue;
        }
      }
    } catch (const error& e) {
      failure = e;
    } catch (const std::exception& e) {
      failure = error(error_kind::input, output, e.what());
    }
    if (!ended && !failure) continue;
    // The run ends at block b: answer its maker, then the one block every other rank has made
    // or is making (b + 1 … b + K − 1), so that none is left waiting.
    const dist::writer_answer outcome = outcome_of(failure);
    if (owner != 0) dist::answer(owner, outcome);
    for (int j = 1; j < K; ++j) {
      const int other = static_cast<int>((b + j) % K);
      if (other == 0) continue;
      dist::take_from(other);
      dist::answer(other, outcome);
    }
    if (failure) throw *failure;
    unknown.finish();
    out->commit();
    return;
  }
}

void make_for_writer(const std::string& input, const batch_plan& plan) {
  const int K = dist::ranks(), r = dist::rank();
  progress_bar quiet(0, "sentences", false);
  std::vector<std::string> warnings;  // this block's, handed over with it
  unknown_tokens unknown(input, plan.terms, plan.strict, quiet,
                         [&](std::string w) { warnings.push_back(std::move(w)); });
  std::optional<line_source> in;
  for (int64_t b = r;; b += K) {
    dist::block_message m;
    try {
      if (!in) in.emplace(input);
      if (!make_block(*in, b, plan, unknown, [&](const std::string& rec) { m.bytes += rec; }))
        m.what = dist::block_message::kind::end;
    } catch (const std::exception& e) {
      m = failure_of(e);
    }
    m.warnings = std::move(warnings);
    warnings.clear();
    const dist::writer_answer a = dist::hand_over(m);
    if (a == dist::writer_answer::go_on) continue;
    if (a == dist::writer_answer::done) return;  // rank 0 counts the warnings left unprinted
    // Rank 0 reports the error; this rank ends with the same exit code, silently.
    throw error(a == dist::writer_answer::failed_usage ? error_kind::usage : error_kind::input, "",
                "stopped with rank 0");
  }
}

}  // namespace

void shared_batch_loop(const std::string& input, const std::string& output,
                       const batch_plan& plan) {
  // Standard input reaches rank 0 alone; every rank needs the lines.
  if (input == "-")
    throw_usage("attn-mpi embed --batch reads a file on every rank; give its path, not -");
  if (plan.npy_columns > 0)  // every rank sees the same plan, so all of them stop here
    throw_usage("attn-mpi embed --batch writes records as they come: --format npy is for attn "
                "embed; use json, csv or text");
  if (dist::rank() == 0)
    write_in_order(input, output, plan);
  else
    make_for_writer(input, plan);
}

}  // namespace attn::cli
