// attn train's flags, made from the rows of attn/train_option_table.hpp.
#include "train_flags.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "attn/error.hpp"
#include "cli_common.hpp"

namespace attn::cli {

namespace {

// --adaptive-softmax's comma-separated cuts: each field a positive integer, none empty.
std::vector<int64_t> parse_cuts(const std::string& text) {
  std::vector<int64_t> cuts;
  size_t start = 0;
  for (int field = 1;; ++field) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string piece = text.substr(start, comma - start);
    int64_t value = 0;
    const auto [end, ec] = std::from_chars(piece.data(), piece.data() + piece.size(), value);
    if (piece.empty() || ec != std::errc() || end != piece.data() + piece.size() || value < 1)
      throw_usage(fmt::format("--adaptive-softmax '{}': field {} is {}; expected positive whole numbers "
                              "between commas, such as 2000,6000",
                              text, field, piece.empty() ? "empty" : fmt::format("'{}'", piece)));
    cuts.push_back(value);
    if (comma == text.size()) break;
    start = comma + 1;
  }
  return cuts;
}

// The validators that hold a number to the row's range, as the help names them.
template <class T>
void check_range(CLI::Option* flag, const option_range& range) {
  using shape = option_range::shape;
  switch (range.form) {
    case shape::any: break;
    case shape::positive: flag->check(positive_number); break;
    case shape::non_negative: flag->check(non_negative_number); break;
    case shape::between: flag->check(CLI::Range(static_cast<T>(range.lo), static_cast<T>(range.hi))); break;
    case shape::up_to:
      flag->check(positive_number);
      flag->check(CLI::Validator(
          [hi = range.hi](std::string& text) -> std::string {
            double value = 0;
            if (CLI::detail::lexical_cast(text, value) && value > hi)
              return fmt::format("must be at most {:g}, not {}", hi, text);
            return "";
          },
          ""));
      break;
  }
}

CLI::Option* add_flag_for(CLI::App* command, const train_option& row, train_options& parsed) {
  const std::string flag = row.flag, name = name_option(row, option_spelling::cli);
  switch (row.kind) {
    case option_kind::integer: {
      CLI::Option* f = command->add_option(flag, parsed.*std::get<int64_t train_options::*>(row.field), row.help);
      check_range<int64_t>(f, row.range);
      return f;
    }
    case option_kind::number: {
      CLI::Option* f = command->add_option(flag, parsed.*std::get<double train_options::*>(row.field), row.help);
      check_range<double>(f, row.range);
      return f;
    }
    case option_kind::flag:
      return command->add_flag(flag, parsed.*std::get<bool train_options::*>(row.field), row.help);
    case option_kind::path:
      return command->add_option(flag, parsed.*std::get<std::string train_options::*>(row.field), row.help);
    // Parsed by attn, not CLI11, whose unsigned conversion wraps -1 and 2^64 into valid seeds.
    case option_kind::seed:
      return command->add_option_function<std::string>(
          flag, [&parsed, m = std::get<uint64_t train_options::*>(row.field)](const std::string& text) {
            parsed.*m = parse_seed(text);
          }, row.help);
    case option_kind::duration:
      return command->add_option_function<std::string>(
          flag, [&parsed, name, m = std::get<double train_options::*>(row.field)](const std::string& text) {
            parsed.*m = parse_duration(text, name);
          }, row.help);
    // Parsed by attn, not CLI11, which reads an empty field ("100,,200") as nothing at all.
    case option_kind::cuts:
      return command->add_option_function<std::string>(
          flag, [&parsed, m = std::get<std::vector<int64_t> train_options::*>(row.field)](const std::string& text) {
            parsed.*m = parse_cuts(text);
          }, row.help);
    case option_kind::pool:
      return command->add_option_function<std::string>(
          flag, [&parsed, m = std::get<pooling train_options::*>(row.field)](const std::string& text) {
            parsed.*m = parse_pooling(text);
          }, row.help);
    case option_kind::dtype:
      return command
          ->add_option_function<std::string>(
              flag, [&parsed, m = std::get<train_dtype train_options::*>(row.field)](const std::string& text) {
                parsed.*m = text == "bf16" ? train_dtype::bf16 : train_dtype::float32;
              }, row.help)
          ->check(CLI::IsMember({"float32", "bf16"}));
    case option_kind::device:
      return command
          ->add_option_function<std::string>(
              flag, [&parsed, m = std::get<train_device train_options::*>(row.field)](const std::string& text) {
                parsed.*m = text == "cuda" ? train_device::cuda : train_device::cpu;
              }, row.help)
          ->check(CLI::IsMember({"cpu", "cuda"}));
  }
  throw std::logic_error("an option kind without a flag");
}

// The help's heading for the options of `tasks` (those every task takes stay in CLI11's "Options").
std::string group_of(task_set tasks, const std::string& common) {
  return tasks == every_task ? common : fmt::format("Options for {}", name_tasks(tasks, option_spelling::cli));
}

}  // namespace

std::vector<std::string> train_flags::given() const {
  std::vector<std::string> keywords;
  for (const auto& [row, flag] : flags)
    if (flag->count() > 0) keywords.emplace_back(row->keyword);
  return keywords;
}

bool train_flags::was_given(const std::string& keyword) const {
  for (const auto& [row, flag] : flags)
    if (keyword == row->keyword) return flag->count() > 0;
  return false;
}

void train_flags::apply_given(train_options& o) const {
  for (const auto& [row, flag] : flags)
    if (flag->count() > 0) std::visit([&](auto member) { o.*member = parsed.*member; }, row->field);
}

void add_train_flags(CLI::App* command, const std::shared_ptr<train_flags>& flags) {
  // The options every task takes first, then a group for each set of tasks, in the table's order.
  std::vector<task_set> groups{every_task};
  for (const train_option& row : train_option_table())
    if (std::find(groups.begin(), groups.end(), row.tasks) == groups.end()) groups.push_back(row.tasks);
  for (const task_set& group : groups)
    for (const train_option& row : train_option_table()) {
      if (row.tasks != group || row.surface == option_surface::python_only) continue;
      CLI::Option* flag = add_flag_for(command, row, flags->parsed);
      if (row.type_name != nullptr) flag->type_name(row.type_name);
      flag->group(group_of(row.tasks, "Options"));
      flags->flags.emplace_back(&row, flag);
    }
}

bool task_takes(const std::string& task, const std::string& keyword) {
  const train_option* row = find_train_option(keyword);
  for (text_task t : every_task.tasks())
    if (task == task_name(t)) return row != nullptr && row->tasks.has(t);
  return false;
}

}  // namespace attn::cli
