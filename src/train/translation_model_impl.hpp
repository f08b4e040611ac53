// What an attn::translation_model holds: its configuration, its subword pieces and the translator.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "attn/training_curve.hpp"
#include "attn/translation_model.hpp"
#include "models/translator.hpp"
#include "text/subword_pieces.hpp"

namespace attn {

struct translation_model::impl {
  impl(const translation_config& c, text::subword_pieces p);

  translation_config config;
  text::subword_pieces pieces;
  models::translator<float> net;
  std::string training;      // JSON: how it was trained (saved as metadata, for the record)
  training_history history;  // what the run scored as it went (saved as "history")

  std::string encode() const;  // the model file's bytes
  // The decoder's weights packed for stepping (models::translator_steps), built on first use and
  // kept; a trainer, whose weights move, calls weights_changed() before it translates again.
  const models::translator_steps& steps() const;
  void weights_changed();
  // The text's pieces followed by </s> (just </s> for a text without pieces).
  std::vector<int64_t> source_ids(std::string_view text) const;

 private:
  mutable std::mutex steps_mutex_;
  mutable std::unique_ptr<const models::translator_steps> steps_;
};

models::translator_shape translator_shape_of(const translation_config& c);

// translation_model::translate's work, for the model's owner and its trainer (the held-out BLEU).
translation translate_text(const translation_model::impl& m, std::string_view text, const translation_options& options);
std::vector<translation> translate_texts(const translation_model::impl& m, const std::vector<std::string>& texts,
                                         const translation_options& options);

}  // namespace attn
