#include "attn/error.hpp"

#include <utility>

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

error::error(error_kind kind, std::string file, std::string what, std::string where)
    : std::runtime_error(compose(file, what, where)),
      kind_(kind),
      file_(std::move(file)),
      problem_(std::move(what)),
      where_(std::move(where)) {}

void throw_usage(std::string what, std::string where) {
  throw error(error_kind::usage, "", std::move(what), std::move(where));
}

void throw_input(std::string file, std::string what, std::string where) {
  throw error(error_kind::input, std::move(file), std::move(what), std::move(where));
}

}  // namespace attn
