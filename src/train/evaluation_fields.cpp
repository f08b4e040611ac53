// attn::evaluation_fields: an evaluation's figures by name, the one list attn eval's JSON and
// Python's evaluate() dict are both written from.
#include "attn/text_model.hpp"

namespace attn {

std::vector<evaluation_field> evaluation_fields(const evaluation& e, text_task task, int64_t every, uint64_t seed) {
  const auto real = [](const char* name, double v) { return evaluation_field{name, v, false, 0}; };
  const auto count = [](const char* name, uint64_t v) { return evaluation_field{name, 0, true, v}; };
  const auto n = [](int64_t v) { return static_cast<uint64_t>(v < 0 ? 0 : v); };
  if (kind_of(task).hides_words)
    // hidden: the words hidden; one the model cannot output counts as wrong (scored: those it
    // can, over which the loss is taken).
    return {real("top1", e.accuracy), real("top5", e.top5), real("loss", e.loss), count("hidden", n(e.n)),
            count("scored", n(e.scored)), count("every", n(every)), count("seed", seed), count("lines", n(e.lines))};
  if (kind_of(task).autoregressive)
    // Unknown words are <unk> tokens the model predicts like any other (unknown_share says how
    // many): perplexity is only comparable between models with the same vocabulary.
    return {real("perplexity", e.perplexity), real("loss", e.loss), count("tokens", n(e.n)),
            real("unknown_share", e.unknown_share), real("accuracy", e.accuracy), count("lines", n(e.lines))};
  // n: the predictions counted (every line, or every next word); scored: those the model could
  // make, over which the loss is taken.
  return {real("accuracy", e.accuracy), real("loss", e.loss), count("n", n(e.n)), count("lines", n(e.lines)),
          count("scored", n(e.scored))};
}

}  // namespace attn
