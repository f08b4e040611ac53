// A plain-text corpus (or .xz / .gz: io/text_lines.hpp) read as a stream of sequences, so a file
// larger than memory trains with flat memory: each line is tokenised (attn::tokenize), split after its sentence ends (". ! ?")
// and sentences longer than max_length are cut into pieces of at most that many tokens
// (max_length 0: each line is one sequence, whole, as the language model reads paragraphs). A
// position can be saved and sought back to, for resuming a run where it stopped.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "io/text_lines.hpp"
#include "text/text_tokenizer.hpp"

namespace attn::train {

struct corpus_position {
  int64_t offset = 0;    // byte offset of the line the next sequence comes from
  int64_t skip = 0;      // sequences of that line already read
  int64_t sequence = 0;  // the next sequence's index in the whole corpus (0-based)
};

// The sequences of one line of text, cut into tokens by the tokenizer (words by default).
std::vector<std::vector<std::string>> split_sequences(const std::string& line, int64_t max_length,
                                                      const text::text_tokenizer& tokenizer = {});

class corpus_reader {
 public:
  // An input error when it cannot be read.
  corpus_reader(std::string path, int64_t max_length, text::text_tokenizer tokenizer = {});
  // The next sequence (its index is position().sequence before the call); false at the end.
  bool next(std::vector<std::string>& tokens);
  corpus_position position() const;
  void seek(const corpus_position& p);
  void rewind() { seek({}); }
  const std::string& path() const { return path_; }

 private:
  bool read_line();  // the next line's sequences into pending_; false at the end

  std::string path_;
  int64_t max_length_;
  text::text_tokenizer tokenizer_;
  io::text_lines lines_;  // plain, .xz or .gz
  std::vector<std::vector<std::string>> pending_;  // the current line's sequences
  size_t taken_ = 0;                               // of pending_, already returned
  int64_t line_offset_ = 0, next_offset_ = 0, sequence_ = 0;
  int64_t line_ = 0;         // lines read since the start or the last seek
  bool line_known_ = true;   // whether line_ counts from the file's start (for messages)
};

}  // namespace attn::train
