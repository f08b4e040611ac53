#include "train/dataset.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "attn/error.hpp"
#include "attn/text_file.hpp"
#include "attn/tokenizer.hpp"
#include "io/text_lines.hpp"

namespace attn::train {

std::vector<text_example> read_examples(const std::string& path, text_task task) {
  io::text_lines in(path);  // plain, .xz or .gz; a directory or a device is refused
  std::vector<text_example> examples;
  std::string line;
  for (int64_t number = 1; in.next(line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    check_utf8(line, path, number);  // refused while reading, before any training
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    text_example ex;
    ex.line = number;
    std::string_view text = line;
    if (kind_of(task).labelled) {
      const size_t tab = line.find('\t');
      if (tab == std::string::npos)
        throw_input(path, "expected 'label<TAB>text' (no tab)", fmt::format("line {}", number));
      ex.label = line.substr(0, tab);
      // Labels are compared as written, less surrounding spaces.
      const size_t first = ex.label.find_first_not_of(' ');
      ex.label = first == std::string::npos ? "" : ex.label.substr(first, ex.label.find_last_not_of(' ') - first + 1);
      if (ex.label.empty()) throw_input(path, "empty label", fmt::format("line {}", number));
      text = std::string_view(line).substr(tab + 1);
    }
    ex.tokens = tokenize(text);
    examples.push_back(std::move(ex));
  }
  return examples;
}

word_index::word_index(std::vector<std::string> words) {
  for (const std::string& w : words) add(w);
}

int64_t word_index::find(const std::string& word) const {
  auto it = index_.find(word);
  return it == index_.end() ? -1 : it->second;
}

int64_t word_index::add_row(const std::string& word) {
  index_[word] = size();
  words_.push_back(word);
  return size() - 1;
}

int64_t word_index::add(const std::string& word) {
  auto [it, added] = index_.try_emplace(word, size());
  if (added) words_.push_back(word);
  return it->second;
}

int64_t encoded_example::predictions() const {
  if (label >= 0) return inputs.empty() ? 0 : 1;
  return std::count_if(outputs.begin() + (outputs.empty() ? 0 : 1), outputs.end(),
                       [](int64_t o) { return o >= 0; });
}

line_targets line_targets_of(text_task task) {
  const task_kind& kind = kind_of(task);
  return kind.labelled ? line_targets::label : kind.every_prefix ? line_targets::next_words : line_targets::none;
}

encoded_example encode_example(const text_example& example, line_targets targets,
                               const word_index& inputs, const word_index& outputs,
                               int64_t max_positions, data_summary& summary) {
  encoded_example e;
  ++summary.lines;
  for (const std::string& token : example.tokens) {
    const int64_t id = inputs.find(token);
    if (id < 0) {
      ++summary.unknown_words;
      if (summary.unknown_examples.size() < 10 &&
          std::find(summary.unknown_examples.begin(), summary.unknown_examples.end(), token) ==
              summary.unknown_examples.end())
        summary.unknown_examples.push_back(token);
      continue;
    }
    e.inputs.push_back(id);
    if (targets == line_targets::next_words) e.outputs.push_back(outputs.find(token));
  }
  if (max_positions > 0 && static_cast<int64_t>(e.inputs.size()) > max_positions) {
    const auto drop = static_cast<std::ptrdiff_t>(e.inputs.size()) - max_positions;
    e.inputs.erase(e.inputs.begin(), e.inputs.begin() + drop);
    if (!e.outputs.empty()) e.outputs.erase(e.outputs.begin(), e.outputs.begin() + drop);
  }
  if (targets == line_targets::label) e.label = outputs.find(example.label);
  summary.tokens += static_cast<int64_t>(e.inputs.size());
  if (e.predictions() == 0) ++summary.skipped_lines;
  return e;
}

nn::batch make_batch(const std::vector<const encoded_example*>& examples, line_targets targets) {
  nn::batch b;
  b.size = static_cast<int64_t>(examples.size());
  for (const encoded_example* e : examples)
    b.length = std::max(b.length, static_cast<int64_t>(e->inputs.size()));
  b.ids.assign(static_cast<size_t>(b.size * b.length), -1);
  for (int64_t i = 0; i < b.size; ++i) {
    const encoded_example& e = *examples[static_cast<size_t>(i)];
    const auto len = static_cast<int64_t>(e.inputs.size());
    b.lengths.push_back(len);
    std::copy(e.inputs.begin(), e.inputs.end(), b.ids.begin() + i * b.length);
    if (targets == line_targets::none) continue;
    if (targets == line_targets::label) {
      if (len > 0 && e.label >= 0) {
        b.rows.push_back({i, len});
        b.targets.push_back(e.label);
      }
      continue;
    }
    // The prefix of the first t tokens predicts token t.
    for (int64_t t = 1; t < len; ++t)
      if (e.outputs[static_cast<size_t>(t)] >= 0) {
        b.rows.push_back({i, t});
        b.targets.push_back(e.outputs[static_cast<size_t>(t)]);
      }
  }
  return b;
}

}  // namespace attn::train
