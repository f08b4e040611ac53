"""Writes toy_pairs.tsv: 60 made-up German–English sentence pairs (subject × verb × place), the
translation task's smallest data for tests (python3 tests/data/make_toy_pairs.py)."""
import itertools
import os

SUBJECTS = [("ein Mann", "a man"), ("eine Frau", "a woman"), ("ein Kind", "a child"), ("ein Hund", "a dog"),
            ("zwei Männer", "two men")]
# (German singular, English singular, German plural, English plural)
VERBS = [("läuft", "runs", "laufen", "run"), ("springt", "jumps", "springen", "jump"),
         ("sitzt", "sits", "sitzen", "sit"), ("schläft", "sleeps", "schlafen", "sleep")]
PLACES = [("im Park", "in the park"), ("am Strand", "on the beach"), ("auf der Straße", "on the street")]


def capitalised(text):
    return text[0].upper() + text[1:]


lines = []
for (sd, se), (vd, ve, vdp, vep), (pd, pe) in itertools.product(SUBJECTS, VERBS, PLACES):
    plural = sd.startswith("zwei")
    lines.append(f"{capitalised(sd)} {vdp if plural else vd} {pd}.\t{capitalised(se)} {vep if plural else ve} {pe}.")
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "toy_pairs.tsv"), "w") as out:
    out.write("\n".join(lines) + "\n")
