// A tokenizer compatible with the vocabulary of GloVe 6B (Wikipedia + Gigaword, tokenised by
// Stanford CoreNLP and lowercased): words lowercased, punctuation split off into its own token,
// English clitics split as the Penn Treebank does ("didn't" → "did" "n't", "it's" → "it" "'s").
// Hyphenated words and numbers with . or , inside stay one token ("well-known", "3.14", "1,000").
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace attn {

std::vector<std::string> tokenize(std::string_view text);

// Whether a token holds a letter or a digit (a word, a number, a clitic such as "n't"), as
// opposed to punctuation and symbols (".", "--", "…", "£").
bool is_word_token(std::string_view token);

}  // namespace attn
