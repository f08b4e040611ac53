// attn::error — the one error type of the library: what went wrong, in which file, where.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace attn {

// Usage errors are the caller's mistake in how attn was called (a bad flag, shapes that do not
// fit each other); input errors are about the data a file holds. The CLI maps usage → exit 1,
// input → exit 2.
enum class error_kind { usage, input };

class error : public std::runtime_error {
 public:
  // file: the path the problem is in ("" when there is none); what: the problem;
  // where: a byte offset, line, record or tensor name ("" when it is the whole thing).
  error(error_kind kind, std::string file, std::string what, std::string where = "");

  error_kind kind() const noexcept { return kind_; }
  const std::string& file() const noexcept { return file_; }
  const std::string& problem() const noexcept { return problem_; }
  const std::string& where() const noexcept { return where_; }

 private:
  error_kind kind_;
  std::string file_, problem_, where_;
};

// Shorthands used across the library.
// The spelling; attn names its types in snake_case like the standard library.
using Error = error;

// Text as a message shows it: control characters (\n, \r, \t, \0 …) and bytes that are not
// well-formed UTF-8 escaped (\n, \r, \t, \xNN), printable UTF-8 kept. attn::error escapes its
// parts with it, so what a file holds can never break the one-line message or a UTF-8 decoder.
std::string escape_for_message(std::string_view text);

[[noreturn]] void throw_usage(std::string what, std::string where = "");
[[noreturn]] void throw_input(std::string file, std::string what, std::string where = "");

}  // namespace attn
