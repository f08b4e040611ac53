#include "train/model_input.hpp"

#include <algorithm>
#include <cctype>

#include "attn/error.hpp"
#include "attn/tokenizer.hpp"
#include "train/lm_stream.hpp"

namespace attn::train {

namespace {

// attn::tokenize, with each "[MASK]" (any case) becoming the mask token.
std::vector<std::string> tokenize_with_masks(std::string_view text) {
  constexpr std::string_view marker = "[mask]";
  std::vector<std::string> tokens;
  while (true) {
    size_t at = std::string_view::npos;
    for (size_t i = 0; i + marker.size() <= text.size() && at == std::string_view::npos; ++i)
      if (std::equal(marker.begin(), marker.end(), text.begin() + static_cast<std::ptrdiff_t>(i),
                     [](char a, char b) { return a == std::tolower(static_cast<unsigned char>(b)); }))
        at = i;
    const std::vector<std::string> part = tokenize(text.substr(0, at));
    tokens.insert(tokens.end(), part.begin(), part.end());
    if (at == std::string_view::npos) return tokens;
    tokens.emplace_back(mask_token);
    text.remove_prefix(at + marker.size());
  }
}

}  // namespace

// A language model reads every token (an unknown word as <unk>) after the end token that
// starts a text, the last max_positions of them; the row is the last token's.
model_input read_lm_input(const text_model::impl& m, std::string_view text) {
  model_input in;
  const std::vector<std::string> tokens = m.tokenizer.tokens(text);
  std::vector<int64_t> ids{m.inputs.find(end_token)};
  in.tokens.push_back(end_token);
  for (const std::string& t : tokens) {
    const int64_t id = m.inputs.find(t);
    if (id < 0) in.unknown.push_back(t);
    ids.push_back(id < 0 ? m.inputs.find(unknown_token) : id);
    in.tokens.push_back(id < 0 ? unknown_token : t);
  }
  in.text_tokens = static_cast<int64_t>(ids.size());
  const auto keep = static_cast<size_t>(std::min<int64_t>(m.config.max_positions, static_cast<int64_t>(ids.size())));
  ids.erase(ids.begin(), ids.end() - static_cast<std::ptrdiff_t>(keep));
  in.tokens.erase(in.tokens.begin(), in.tokens.end() - static_cast<std::ptrdiff_t>(keep));
  in.encoded.inputs = ids;
  in.batch.size = 1;
  in.batch.length = static_cast<int64_t>(ids.size());
  in.batch.ids = ids;
  in.batch.lengths = {in.batch.length};
  in.batch.rows = {{0, in.batch.length}};
  return in;
}

model_input read_input(const text_model::impl& m, std::string_view text) {
  if (kind_of(m.config.task).autoregressive) return read_lm_input(m, text);
  model_input in;
  text_example example;
  const bool masked = kind_of(m.config.task).hides_words;
  example.tokens = masked ? tokenize_with_masks(text) : tokenize(text);
  data_summary summary;
  // Only the inputs matter here.
  in.encoded = encode_example(example, line_targets::none, m.inputs, m.outputs,
                              m.config.max_positions, summary);
  for (const std::string& t : example.tokens)
    (m.inputs.find(t) < 0 ? in.unknown : in.tokens).push_back(t);
  // encode_example keeps the last max_positions known tokens; so do the labels.
  in.text_tokens = static_cast<int64_t>(in.tokens.size());
  in.tokens.erase(in.tokens.begin(),
                  in.tokens.end() - static_cast<std::ptrdiff_t>(in.encoded.inputs.size()));
  if (in.encoded.inputs.empty()) throw_usage("no word of the text is known to the model");
  in.batch = make_batch({&in.encoded}, line_targets::none);
  in.batch.rows = {{0, in.batch.length}};
  in.batch.targets.clear();
  if (masked) {  // the row is the first hidden place (or the last token: only y is read then)
    const auto it = std::find(in.tokens.begin(), in.tokens.end(), mask_token);
    if (it != in.tokens.end()) {
      in.mask_position = it - in.tokens.begin();
      in.batch.rows = {{0, in.mask_position + 1}};
    }
  }
  return in;
}

}  // namespace attn::train
