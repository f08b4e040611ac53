#include "train/model_input.hpp"

#include "attn/error.hpp"
#include "attn/tokenizer.hpp"

namespace attn::train {

model_input read_input(const text_model::impl& m, std::string_view text) {
  model_input in;
  text_example example;
  example.tokens = tokenize(text);
  data_summary summary;
  // Only the inputs matter here: the example is encoded as a sentence to classify.
  in.encoded = encode_example(example, text_task::classify, m.inputs, m.outputs,
                              m.config.max_positions, summary);
  for (const std::string& t : example.tokens)
    (m.inputs.find(t) < 0 ? in.unknown : in.tokens).push_back(t);
  // encode_example keeps the last max_positions known tokens; so do the labels.
  in.tokens.erase(in.tokens.begin(),
                  in.tokens.end() - static_cast<std::ptrdiff_t>(in.encoded.inputs.size()));
  if (in.encoded.inputs.empty()) throw_usage("no word of the text is known to the model");
  in.batch = make_batch({&in.encoded}, text_task::classify);
  in.batch.rows = {{0, in.batch.length}};
  in.batch.targets.clear();
  return in;
}

}  // namespace attn::train
