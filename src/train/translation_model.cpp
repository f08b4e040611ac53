// attn::translation_model's file: safetensors whose tensors carry nn.Transformer's names and whose
// metadata holds the format, the shape ("config"), the piece model (base64 of SentencePiece's
// bytes), the training record and the history. Read as untrusted input: every field typed, every
// tensor's shape and values checked, the piece model parsed, before anything is used.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "attn/error.hpp"
#include "attn/safetensors.hpp"
#include "io/base64.hpp"
#include "io/json_fields.hpp"
#include "io/read_file.hpp"
#include "io/replace_file.hpp"
#include "train/parameter_file.hpp"
#include "train/training_history.hpp"
#include "train/translation_model_impl.hpp"

namespace attn {

models::translator_shape translator_shape_of(const translation_config& c) {
  return {.vocabulary = c.vocabulary, .width = c.width, .heads = c.heads, .encoder_layers = c.encoder_layers,
          .decoder_layers = c.decoder_layers, .feedforward = c.feedforward, .dropout = c.dropout,
          .residual_dropout = c.residual_dropout, .label_smoothing = c.label_smoothing};
}

translation_model::impl::impl(const translation_config& c, text::subword_pieces p)
    : config(c), pieces(std::move(p)), net(translator_shape_of(c)) {}

const models::translator_steps& translation_model::impl::steps() const {
  const std::lock_guard lock(steps_mutex_);
  if (steps_ == nullptr) steps_ = std::make_unique<const models::translator_steps>(net);
  return *steps_;
}

void translation_model::impl::weights_changed() {
  const std::lock_guard lock(steps_mutex_);
  steps_.reset();
}

std::vector<int64_t> translation_model::impl::source_ids(std::string_view text) const {
  const std::vector<int32_t> ids = pieces.encode(text);
  std::vector<int64_t> out(ids.begin(), ids.end());
  out.push_back(text::subword_pieces::end);
  return out;
}

translation_model::translation_model() = default;
translation_model::~translation_model() = default;
translation_model::translation_model(translation_model&&) noexcept = default;
translation_model& translation_model::operator=(translation_model&&) noexcept = default;
translation_model::translation_model(std::unique_ptr<impl> p) : impl_(std::move(p)) {}

const translation_config& translation_model::config() const { return impl_->config; }
const std::string& translation_model::training_record() const { return impl_->training; }

std::vector<std::string> translation_model::pieces(std::string_view text) const { return impl_->pieces.pieces(text); }

std::vector<int32_t> translation_model::piece_ids(std::string_view text) const { return impl_->pieces.encode(text); }

std::vector<std::string> translation_model::piece_table() const {
  std::vector<std::string> table;
  for (int32_t id = 0; id < impl_->pieces.size(); ++id) table.push_back(impl_->pieces.piece(id));
  return table;
}

std::string translation_model::encode() const { return impl_->encode(); }

std::string translation_model::impl::encode() const {
  safetensors_file file;
  std::vector<nn::parameter<float>*> all;
  const_cast<models::translator<float>&>(net).append_parameters(all);  // (read only)
  for (const nn::parameter<float>* p : all) file.tensors.emplace(p->name, tensor(p->shape, p->value));
  const translation_config& c = config;
  const nlohmann::json shape = {{"vocabulary", c.vocabulary},
                                {"width", c.width},
                                {"heads", c.heads},
                                {"encoder_layers", c.encoder_layers},
                                {"decoder_layers", c.decoder_layers},
                                {"feedforward", c.feedforward},
                                {"dropout", c.dropout},
                                {"residual_dropout", c.residual_dropout},
                                {"label_smoothing", c.label_smoothing},
                                {"max_length", c.max_length},
                                {"norm_first", true},
                                {"positions", "sinusoidal"},
                                {"activation", "relu"}};
  file.metadata["format"] = translation_model_format;
  file.metadata["task"] = "translate";
  file.metadata["config"] = shape.dump();
  file.metadata["pieces"] = io::base64_encode(pieces.serialized());
  if (!training.empty()) file.metadata["training"] = training;
  if (!history.empty()) file.metadata["history"] = train::history_json(history);
  return encode_safetensors(file);
}

void translation_model::save(const std::string& path) const {
  const std::string bytes = encode();
  io::replace_file(path, "model file",
                   [&](std::ostream& out) { out.write(bytes.data(), static_cast<std::streamsize>(bytes.size())); });
}

bool is_translation_model_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  unsigned char length_bytes[8];
  if (!in.read(reinterpret_cast<char*>(length_bytes), 8)) return false;
  uint64_t length = 0;
  for (int i = 7; i >= 0; --i) length = length << 8 | length_bytes[i];
  if (length == 0 || length > 100'000'000) return false;
  std::string header(static_cast<size_t>(length), '\0');
  if (!in.read(header.data(), static_cast<std::streamsize>(length))) return false;
  const nlohmann::json j = nlohmann::json::parse(header, nullptr, false);
  if (!j.is_object() || !j.contains("__metadata__") || !j["__metadata__"].is_object()) return false;
  const nlohmann::json& meta = j["__metadata__"];
  return meta.contains("format") && meta["format"] == translation_model_format;
}

translation_model translation_model::load(const std::string& path) {
  // (text_model::load's names for the built-in models; a file of that name is "./builtin")
  if (path == "builtin" || path == "builtin-lm")
    throw_input(path, "is attn's built-in text model, not a translation model (attn train --task translate makes one)");
  return decode(read_file(path), path);
}

translation_model translation_model::decode(const std::string& bytes, const std::string& source) {
  safetensors_file file = parse_safetensors(bytes, source);
  const auto meta = [&](const char* key) -> const std::string& {
    auto it = file.metadata.find(key);
    if (it == file.metadata.end())
      throw_input(source, fmt::format("not an attn translation model: no '{}' in __metadata__", key));
    return it->second;
  };
  if (meta("format") != translation_model_format)
    throw_input(source, fmt::format("not a translation model: its format is '{}' (attn translate reads '{}', "
                                    "made by attn train --task translate)",
                                    meta("format"), translation_model_format));
  translation_config c;
  const io::json_fields f(source, "model config field");
  const nlohmann::json j = f.parse(meta("config"), "config");
  if (!j.is_object()) f.fail("config", "must be a JSON object");
  c.vocabulary = f.integer(j, "vocabulary");
  c.width = f.integer(j, "width");
  c.heads = f.integer(j, "heads");
  c.encoder_layers = f.integer(j, "encoder_layers");
  c.decoder_layers = f.integer(j, "decoder_layers");
  c.feedforward = f.integer(j, "feedforward");
  c.dropout = f.number(j, "dropout");
  c.residual_dropout = f.has(j, "residual_dropout") ? f.number(j, "residual_dropout") : 0.0;
  c.label_smoothing = f.number(j, "label_smoothing");
  c.max_length = f.integer(j, "max_length");
  // Sizes a network is made from: bounded before any allocation.
  f.range("vocabulary", static_cast<double>(c.vocabulary), 5, 1 << 22);
  f.range("width", static_cast<double>(c.width), 1, 1 << 16);
  f.range("heads", static_cast<double>(c.heads), 1, static_cast<double>(c.width));
  if (c.width % c.heads != 0) f.fail("heads", fmt::format("{} does not divide the width {}", c.heads, c.width));
  f.range("encoder_layers", static_cast<double>(c.encoder_layers), 1, 256);
  f.range("decoder_layers", static_cast<double>(c.decoder_layers), 1, 256);
  f.range("feedforward", static_cast<double>(c.feedforward), 1, 1 << 18);
  f.range("dropout", c.dropout, 0, 1);
  f.range("residual_dropout", c.residual_dropout, 0, 1);
  f.range("label_smoothing", c.label_smoothing, 0, 1);
  f.range("max_length", static_cast<double>(c.max_length), 0, 1 << 20);
  if (f.text(j, "positions") != "sinusoidal") f.fail("positions", "must be sinusoidal");
  if (!f.boolean(j, "norm_first")) f.fail("norm_first", "must be true (pre-norm layers)");

  const std::optional<std::string> piece_bytes = io::base64_decode(meta("pieces"));
  if (!piece_bytes) throw_input(source, "the piece table (metadata 'pieces') is not base64");
  text::subword_pieces pieces(*piece_bytes, source + " (its piece table)");
  if (pieces.size() != c.vocabulary)
    throw_input(source, fmt::format("the piece table holds {} pieces, but the model has {} rows", pieces.size(),
                                    c.vocabulary));

  auto m = std::make_unique<impl>(c, std::move(pieces));
  std::vector<nn::parameter<float>*> all;
  m->net.append_parameters(all);
  for (nn::parameter<float>* p : all) train::read_parameter(file, *p, source);
  if (auto it = file.metadata.find("training"); it != file.metadata.end()) m->training = it->second;
  if (auto it = file.metadata.find("history"); it != file.metadata.end())
    m->history = train::parse_history(it->second, io::json_fields(source, "model metadata field"));
  return translation_model(std::move(m));
}

}  // namespace attn
