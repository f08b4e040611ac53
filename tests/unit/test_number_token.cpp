// Which tokens count as numbers (text/number_token.hpp), read through the shared number vector
// when the vectors lack them.
#include <gtest/gtest.h>

#include <string_view>

#include "text/number_token.hpp"

namespace {

using attn::text::is_number;

TEST(number_token, digits_with_sign_thousands_commas_and_decimals) {
  for (std::string_view n : {"1990", "2", "0", "007", "3.5", ".5", "-4", "+4", "1,000",
                             "12,345,678", "999,999.25", "-0.001", "3.14159"})
    EXPECT_TRUE(is_number(n)) << n;
}

TEST(number_token, everything_else_is_not) {
  for (std::string_view n : {"",     "-",   "+",    ".",      "1.",       "-.",   "1990s",  "2nd",
                             "v8",   "3,4", "1,00", "1,0000", "1234,567", ",000", "1,000,", "1.2.3",
                             "1..2", "--4", "4-",   "1e5",    "0x1F",     "one",  "٣"})
    EXPECT_FALSE(is_number(n)) << n;
}

}  // namespace
