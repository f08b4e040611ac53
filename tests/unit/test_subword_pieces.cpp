// Subword pieces (text/subword_pieces.hpp): learned from a small bilingual text, they round-trip
// its sentences and unseen ones, spell an unseen word with known pieces, keep case, put the
// special ids where fairseq and Marian put them, and learn the same bytes twice.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "attn/error.hpp"
#include "text/subword_pieces.hpp"

namespace {

using attn::text::learn_pieces;
using attn::text::piece_kind;
using attn::text::piece_training;
using attn::text::subword_pieces;

std::vector<std::string> bilingual_text() {
  const std::vector<std::string> en = {"A man rides a bicycle down the street.", "Two dogs play in the green grass.",
                                       "A woman is reading a book in the park.", "Children are playing football.",
                                       "The old man walks his dog."};
  const std::vector<std::string> de = {"Ein Mann fährt mit dem Fahrrad die Straße entlang.",
                                       "Zwei Hunde spielen im grünen Gras.", "Eine Frau liest im Park ein Buch.",
                                       "Kinder spielen Fußball.", "Der alte Mann geht mit seinem Hund spazieren."};
  std::vector<std::string> text;
  for (int repeat = 0; repeat < 20; ++repeat) {
    text.insert(text.end(), en.begin(), en.end());
    text.insert(text.end(), de.begin(), de.end());
  }
  return text;
}

TEST(SubwordPieces, RoundTripsSeenAndUnseenTextWithKnownPieces) {
  for (piece_kind kind : {piece_kind::bpe, piece_kind::unigram}) {
    const subword_pieces p(learn_pieces(bilingual_text(), {.vocabulary = 120, .kind = kind}));
    EXPECT_GT(p.size(), 60);
    EXPECT_LE(p.size(), 120);
    for (const std::string s : {"Ein Mann fährt mit dem Fahrrad die Straße entlang.", "A dog reads the grass.",
                                "Zwei Frauen spielen Fußball im Park."}) {
      const std::vector<int32_t> ids = p.encode(s);
      ASSERT_FALSE(ids.empty());
      EXPECT_EQ(p.decode(ids), s) << s;
      for (int32_t id : ids) EXPECT_NE(id, subword_pieces::unknown) << s;  // every character was seen
    }
    // a word the text never had is spelled with pieces it learned, case kept
    const std::vector<std::string> spelled = p.pieces("Gardens");
    EXPECT_GT(spelled.size(), 1u);
    EXPECT_EQ(p.decode(p.encode("Gardens")), "Gardens");
  }
}

TEST(SubwordPieces, SpecialIdsAndTheUnknown) {
  const subword_pieces p(learn_pieces(bilingual_text(), {.vocabulary = 100}));
  EXPECT_EQ(p.piece(subword_pieces::pad), "<pad>");
  EXPECT_EQ(p.piece(subword_pieces::unknown), "<unk>");
  EXPECT_EQ(p.piece(subword_pieces::begin), "<s>");
  EXPECT_EQ(p.piece(subword_pieces::end), "</s>");
  const std::vector<int32_t> ids = p.encode("Ω");  // a character the text never showed
  EXPECT_NE(std::find(ids.begin(), ids.end(), subword_pieces::unknown), ids.end());
  EXPECT_THROW(p.decode({static_cast<int32_t>(p.size())}), attn::error);
}

TEST(SubwordPieces, LearnsTheSameBytesTwiceAndLoadsThem) {
  const std::string a = learn_pieces(bilingual_text(), {.vocabulary = 90});
  const std::string b = learn_pieces(bilingual_text(), {.vocabulary = 90});
  EXPECT_EQ(a, b);
  const subword_pieces p(a);
  EXPECT_EQ(p.serialized(), a);
  const subword_pieces moved = subword_pieces(std::string(a));
  EXPECT_EQ(moved.encode("Ein Hund."), p.encode("Ein Hund."));
}

TEST(SubwordPieces, RefusesNoTextAndBytesThatAreNoModel) {
  EXPECT_THROW(learn_pieces({}, {}), attn::error);
  EXPECT_THROW(learn_pieces({" ", ""}, {}), attn::error);
  try {
    subword_pieces("not a model", "m.safetensors");
    FAIL() << "no error";
  } catch (const attn::error& e) {
    EXPECT_NE(std::string(e.what()).find("m.safetensors"), std::string::npos) << e.what();
  }
}

}  // namespace
