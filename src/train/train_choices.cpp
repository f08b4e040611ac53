// What attn train and attn.train share before training: the task and duration names, and the
// checks of the options given (attn/train_option_table.hpp holds what they check against).
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <cmath>
#include <limits>

#include "attn/error.hpp"
#include "attn/train.hpp"
#include "attn/train_option_table.hpp"

namespace attn {

text_task parse_task(const std::string& name, const std::string& option) {
  if (const task_kind* kind = task_named(name)) return kind->task;
  throw_usage(fmt::format("{} '{}': expected next-word, classify, masked-word, lm or translate", option, name));
}

double parse_duration(const std::string& text, const std::string& option) {
  // Every number takes its unit, and the units come at most once each, largest first: "1h30m"
  // and "90s", never "30" (seconds? minutes?), "1h30" or "1s1s", which would guess.
  double seconds = 0;
  const char* at = text.data();
  const char* end = text.data() + text.size();
  bool ok = at < end;
  int next_unit = 0;  // the units not yet taken: h (0), m (1), s (2)
  while (ok && at < end) {
    double value = 0;
    const auto [after, ec] = std::from_chars(at, end, value);
    if (ec != std::errc() || !(value >= 0) || after == end) {
      ok = false;
      break;
    }
    const char* units = "hms";
    const char* u = std::strchr(units, *after);
    if (*after == '\0' || u == nullptr || u - units < next_unit) {
      ok = false;
      break;
    }
    next_unit = static_cast<int>(u - units) + 1;
    seconds += value * (*u == 'h' ? 3600 : *u == 'm' ? 60 : 1);
    at = after + 1;
  }
  if (!ok || !(seconds > 0) || !std::isfinite(seconds))
    throw_usage(fmt::format("{} '{}': expected a duration such as 90s, 30m, 1h or 1h30m (a unit after "
                            "every number, h, m and s at most once each, in that order)",
                            option, text));
  return seconds;
}

namespace {

// The range a value must lie in: the row's, and the member's default where it lies below (dim=0,
// window=-1), since an option not given holds it. (attn train's validators hold a flag given to
// the row's range alone.)
struct bounds {
  double lo, hi;
  bool above_lo;
};
constexpr double unbounded = std::numeric_limits<double>::max();

bounds bounds_of(const train_option& option) {
  using shape = option_range::shape;
  const option_range& r = option.range;
  const bool integer = option.kind == option_kind::integer || option.kind == option_kind::cuts;
  bounds b{-unbounded, unbounded, false};
  switch (r.form) {
    case shape::any: return b;
    case shape::positive: b = integer ? bounds{1, unbounded, false} : bounds{0, unbounded, true}; break;
    case shape::non_negative: b = {0, unbounded, false}; break;
    case shape::between: b = {r.lo, r.hi, false}; break;
    case shape::up_to: b = {r.lo, r.hi, true}; break;
  }
  const double fallback = option_default(option, train_options{}.task);  // train_options{}'s
  if (option.kind != option_kind::cuts && fallback < b.lo)
    b = {fallback, b.hi, false};
  return b;
}

// One usage error naming the option and its value: "--dropout 2: must be in [0, 0.95]".
void check_range(const train_option& option, double value, option_spelling spelling) {
  const bounds b = bounds_of(option);
  if ((b.above_lo ? value > b.lo : value >= b.lo) && value <= b.hi) return;  // NaN and ±inf fail
  const std::string range = b.hi < unbounded ? fmt::format("must be in {}{}, {}]", b.above_lo ? "(" : "[", b.lo, b.hi)
                            : b.above_lo     ? fmt::format("must be more than {}", b.lo)
                                             : fmt::format("must be {} or more", b.lo);
  const std::string named = spelling == option_spelling::cli ? fmt::format("{} {}", name_option(option, spelling), value)
                                                              : fmt::format("{}={}", option.keyword, value);
  throw_usage(fmt::format("{}: {}", named, range));
}

}  // namespace

void check_option_ranges(const train_options& o, option_spelling spelling) {
  for (const train_option& option : train_option_table()) {
    if (option.range.form == option_range::shape::any) continue;
    std::visit(
        [&](auto member) {
          using value_type = std::remove_cvref_t<decltype(o.*member)>;
          if constexpr (std::is_same_v<value_type, std::vector<int64_t>>) {
            for (const int64_t v : o.*member) check_range(option, static_cast<double>(v), spelling);
          } else if constexpr (std::is_arithmetic_v<value_type>) {
            check_range(option, static_cast<double>(o.*member), spelling);
          }
        },
        option.field);
  }
}

void check_task_options(const train_options& o, const std::vector<std::string>& given, option_spelling spelling) {
  // An option the task does not take would be silently ignored: say which tasks take it.
  for (const train_option& option : train_option_table()) {
    if (option.tasks.has(o.task)) continue;
    if (std::find(given.begin(), given.end(), option.keyword) != given.end())
      throw_usage(fmt::format("{} is for {}", name_option(option, spelling), name_tasks(option.tasks, spelling)));
  }
  check_option_ranges(o, spelling);
  const bool cli = spelling == option_spelling::cli;
  if (o.group_by_length && o.pack_sentences)
    throw_usage(fmt::format("{} and {} are two ways to cut padding: choose one", cli ? "--group-by-length" : "group_by_length",
                            cli ? "--pack-sentences" : "pack_sentences"));
}

}  // namespace attn
