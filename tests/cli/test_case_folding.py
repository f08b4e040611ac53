"""attn's lowercasing (src/text/lowercase.cpp) against Python's str.lower(), code point by code
point, over every block it covers: Basic Latin to Cyrillic Supplement, U+0000 to U+052F. Python's
lower() is Unicode's full mapping; where that gives more than one code point (only İ here) the
simple mapping is checked instead."""
import json

# The two letters attn leaves alone on purpose: their lowercase (U+2C65, U+2C66) would take a
# third UTF-8 byte, and the tokenizer never lengthens a text (src/text/lowercase.hpp).
KEPT = {0x023A, 0x023E}
SIMPLE = {0x0130: "i"}  # İ: lower() gives "i" + U+0307 COMBINING DOT ABOVE


def expected_lowercase(cp):
    if cp in KEPT:
        return chr(cp)
    if cp in SIMPLE:
        return SIMPLE[cp]
    lower = chr(cp).lower()
    assert len(lower) == 1, f"U+{cp:04X} has a multi-code-point lowercase this test does not know"
    return lower


def test_every_code_point_lowercases_as_python_says(attn, tmp_path):
    # Each code point as a one-character token, then "xx", the only word the vectors know, so
    # that the JSON lists every other token, lowercased, under "unknown". ASCII punctuation,
    # digits, controls and spaces split or vanish in the tokenizer, so ASCII is letters only;
    # U+00A0 is a space to it.
    points = [cp for cp in range(0x41, 0x5B)] + [cp for cp in range(0x80, 0x530) if cp != 0xA0]
    vectors = tmp_path / "xx.txt"
    vectors.write_text("xx 0.5 0.25\n")
    text = " ".join(chr(cp) for cp in points) + " xx"
    r = attn("embed", "--vectors", vectors, "--format", "json", text)
    assert r.code == 0, r.err
    got = json.loads(r.out)["unknown"]
    assert len(got) == len(points)
    wrong = [f"U+{cp:04X} {chr(cp)!r} → {g!r}, expected {expected_lowercase(cp)!r}"
             for cp, g in zip(points, got) if g != expected_lowercase(cp)]
    assert wrong == [], "\n".join(wrong[:20])
    # The comparison covered what it means to: 429 letters change case (26 of them ASCII).
    assert sum(expected_lowercase(cp) != chr(cp) for cp in points) == 429
