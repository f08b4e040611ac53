// SentencePiece's trainer and processor behind subword_pieces.hpp.
#include "text/subword_pieces.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include "attn/error.hpp"

// SentencePiece's own log threshold: exported by libsentencepiece (0.1.97) though no installed
// header declares it. The trainer otherwise prints its settings and progress on stderr before it
// reads --minloglevel.
namespace sentencepiece::logging {
void SetMinLogLevel(int level);
}

namespace attn::text {

namespace {

// The sentences as SentencePiece's trainer reads them.
class sentence_list : public sentencepiece::SentenceIterator {
 public:
  explicit sentence_list(const std::vector<std::string>& s) : sentences_(s) {}
  bool done() const override { return at_ >= sentences_.size(); }
  void Next() override { ++at_; }
  const std::string& value() const override { return sentences_[at_]; }
  sentencepiece::util::Status status() const override { return {}; }

 private:
  const std::vector<std::string>& sentences_;
  size_t at_ = 0;
};

}  // namespace

std::string learn_pieces(const std::vector<std::string>& sentences, const piece_training& o) {
  bool any = false;
  for (const std::string& s : sentences) any = any || s.find_first_not_of(" \t\r\n") != std::string::npos;
  if (!any) throw_usage("no text to learn subword pieces from");
  if (o.vocabulary < 8) throw_usage(fmt::format("--pieces {}: at least 8 (four are special)", o.vocabulary));
  // input_sentence_size 0: every sentence, none sampled (sampling would draw from a random
  // seed); one thread; the vocabulary a soft limit (a small text yields what it can).
  const std::string args = fmt::format(
      "--model_type={} --vocab_size={} --character_coverage={} --max_sentence_length={} "
      "--input_sentence_size=0 --num_threads=1 --hard_vocab_limit=false "
      "--pad_id={} --unk_id={} --bos_id={} --eos_id={} --minloglevel=2",
      o.kind == piece_kind::bpe ? "bpe" : "unigram", o.vocabulary, o.character_coverage, o.max_sentence_bytes,
      subword_pieces::pad, subword_pieces::unknown, subword_pieces::begin, subword_pieces::end);
  sentencepiece::logging::SetMinLogLevel(2);  // errors only
  sentence_list list(sentences);
  std::string model;
  const sentencepiece::util::Status status = sentencepiece::SentencePieceTrainer::Train(args, &list, &model);
  if (!status.ok()) {
    // The one failure a caller can cause: fewer pieces than the text has characters (each needs
    // its own piece, so that no character is unknown). SentencePiece words it "N vs M".
    const std::string why = status.ToString();
    if (const size_t at = why.find("smaller than required_chars. "); at != std::string::npos) {
      long given = 0, needed = 0;
      if (std::sscanf(why.c_str() + at + 29, "%ld vs %ld", &given, &needed) == 2)
        throw_usage(fmt::format("--pieces {}: the text has more characters than that, and each needs a piece of its "
                                "own; give at least {}",
                                o.vocabulary, needed));
    }
    throw_usage(fmt::format("learning subword pieces: {}", why));
  }
  return model;
}

subword_pieces::subword_pieces(std::string serialized, const std::string& source)
    : processor_(std::make_unique<sentencepiece::SentencePieceProcessor>()), serialized_(std::move(serialized)) {
  const sentencepiece::util::Status status = processor_->LoadFromSerializedProto(serialized_);
  if (!status.ok()) throw_input(source, fmt::format("not a SentencePiece model ({})", status.ToString()));
  // Every id attn writes assumes the specials' places.
  if (processor_->pad_id() != pad || processor_->unk_id() != unknown || processor_->bos_id() != begin ||
      processor_->eos_id() != end || processor_->GetPieceSize() <= end)
    throw_input(source, "a SentencePiece model whose special pieces are not <pad> 0, <unk> 1, <s> 2, </s> 3");
}

subword_pieces::~subword_pieces() = default;
subword_pieces::subword_pieces(subword_pieces&&) noexcept = default;
subword_pieces& subword_pieces::operator=(subword_pieces&&) noexcept = default;

std::vector<int32_t> subword_pieces::encode(std::string_view text) const {
  std::vector<int> ids;
  processor_->Encode(text, &ids).IgnoreError();  // (fails only without a model)
  return {ids.begin(), ids.end()};
}

std::vector<std::string> subword_pieces::pieces(std::string_view text) const {
  std::vector<std::string> out;
  processor_->Encode(text, &out).IgnoreError();
  return out;
}

std::string subword_pieces::decode(const std::vector<int32_t>& ids) const {
  for (int32_t id : ids)
    if (id < 0 || id >= size()) throw_usage(fmt::format("piece {} is not among the model's {} pieces", id, size()));
  std::string text;
  processor_->Decode(std::vector<int>(ids.begin(), ids.end()), &text).IgnoreError();
  return text;
}

int64_t subword_pieces::size() const { return processor_->GetPieceSize(); }

const std::string& subword_pieces::piece(int32_t id) const { return processor_->IdToPiece(id); }

}  // namespace attn::text
