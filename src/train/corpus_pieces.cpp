#include "train/corpus_pieces.hpp"

#include <memory>
#include <string>
#include <vector>

#include "attn/error.hpp"
#include "attn/text_file.hpp"
#include "io/text_lines.hpp"

namespace attn::train {

text::text_tokenizer learn_corpus_pieces(const train_options& o) {
  io::text_lines lines(o.data);
  std::vector<std::string> sample;
  std::string line;
  int64_t bytes = 0, n = 0;
  while (bytes < piece_sample_bytes && lines.next(line)) {
    ++n;
    check_utf8(line, o.data, n);
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    bytes += static_cast<int64_t>(line.size());
    sample.push_back(std::move(line));
  }
  if (sample.empty()) throw_input(o.data, "no text (every line is blank)");
  // A paragraph a line: SentencePiece's 4192-byte default would leave long ones out.
  text::piece_training options{.vocabulary = o.pieces, .max_sentence_bytes = int64_t{1} << 20};
  auto pieces = std::make_shared<const text::subword_pieces>(text::learn_pieces(sample, options), "the learned pieces");
  return text::text_tokenizer(std::move(pieces));
}

}  // namespace attn::train

namespace attn {

void settle_piece_embeddings(train_options& o, bool vectors_given) {
  using train::piece_embedding_width;
  if (!kind_of(o.task).autoregressive || o.pieces <= 0) return;
  if (vectors_given) throw_usage("--vectors is for word tokens: --pieces learns its pieces' embeddings");
  if (o.learn_embeddings <= 0) o.learn_embeddings = o.dim > 0 ? o.dim : piece_embedding_width;
}

}  // namespace attn
