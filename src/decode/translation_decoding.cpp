#include "decode/translation_decoding.hpp"

#include "attn/error.hpp"

namespace attn::decode {

namespace {

struct translation_state final : decoder_state {
  explicit translation_state(const models::translator_decoder& d) : decoder(d) {}
  std::unique_ptr<decoder_state> copy() const override { return std::make_unique<translation_state>(*this); }
  models::translator_decoder decoder;
};

}  // namespace

translation_decoding::translation_decoding(const models::translator_steps& model, std::span<const int64_t> source,
                                           int64_t capacity)
    : model_(model), empty_(model, source, capacity) {}

std::unique_ptr<decoder_state> translation_decoding::start() const {
  return std::make_unique<translation_state>(empty_);
}

std::span<const float> translation_decoding::read(decoder_state& state, std::span<const int64_t> tokens) const {
  if (tokens.empty()) throw_usage("a decoder reads at least one token");
  auto& s = static_cast<translation_state&>(state);
  std::span<const float> logits;
  for (const int64_t token : tokens) logits = s.decoder.step(token);
  return logits;
}

std::vector<std::span<const float>> translation_decoding::step_each(std::span<decoder_state* const> states,
                                                                   std::span<const int64_t> tokens) const {
  std::vector<models::translator_decoder*> decoders;
  for (decoder_state* s : states) decoders.push_back(&static_cast<translation_state*>(s)->decoder);
  models::translator_decoder::step_together(decoders, tokens);
  std::vector<std::span<const float>> out;
  for (models::translator_decoder* d : decoders) out.emplace_back(d->logits());
  return out;
}

}  // namespace attn::decode
