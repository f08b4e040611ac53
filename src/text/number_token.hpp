// Which tokens are numbers: the ones a vectors table without number rows (the embedded GloVe
// lacks them all) reads through its shared number vector (vectors::lookup).
#pragma once

#include <string_view>

namespace attn::text {

// Digits with an optional sign, thousands commas and a decimal part, as the tokenizer keeps
// them whole: "1990", "2", "3.5", ".5", "-4", "1,000", "12,345.67". Not "1990s", "3,4" (no
// thousands grouping), "1." or "-".
bool is_number(std::string_view token);

}  // namespace attn::text
