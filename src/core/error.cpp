#include "attn/error.hpp"

#include <utility>

#include "core/utf8.hpp"

namespace attn {

namespace {
// "file: what, where" with the empty parts left out.
std::string compose(const std::string& file, const std::string& what, const std::string& where) {
  std::string message;
  if (!file.empty()) message = file + ": ";
  message += what;
  if (!where.empty()) message += ", " + where;
  return message;
}
}  // namespace

// Every part is escaped (core/utf8.hpp): a message quotes what files hold, and raw bytes (a CR,
// a NUL, Latin-1) would break the one-line message or a UTF-8 decoder.
error::error(error_kind kind, std::string file, std::string what, std::string where)
    : std::runtime_error(compose(escape_for_message(file), escape_for_message(what),
                                 escape_for_message(where))),
      kind_(kind),
      file_(escape_for_message(file)),
      problem_(escape_for_message(what)),
      where_(escape_for_message(where)) {}

void throw_usage(std::string what, std::string where) {
  throw error(error_kind::usage, "", std::move(what), std::move(where));
}

void throw_input(std::string file, std::string what, std::string where) {
  throw error(error_kind::input, std::move(file), std::move(what), std::move(where));
}

}  // namespace attn
