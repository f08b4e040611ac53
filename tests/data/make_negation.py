#!/usr/bin/env python3
"""Writes the negation task of issue #4: sentences labelled positive or negative by their
adjective and whether it is negated ("the movie was not good" is negative). The held-out set is
written with templates (and so nouns, verbs and word orders) the training set never uses, so a
model must learn "not/never + adjective" rather than memorise sentences.

    python3 tests/data/make_negation.py tests/data    # writes negation_train.tsv, negation_heldout.tsv
"""
import itertools
import pathlib
import sys

POSITIVE = ["good", "great", "excellent", "wonderful", "fantastic",
            "enjoyable", "brilliant", "pleasant", "superb", "delightful"]
NEGATIVE = ["bad", "terrible", "awful", "boring", "horrible",
            "dull", "poor", "dreadful", "disappointing", "mediocre"]
NEGATIONS = ["", "not", "never"]

TRAIN_TEMPLATES = [
    "the movie was {neg} {adj}",
    "this film is {neg} {adj}",
    "i thought the plot was {neg} {adj}",
    "the story is {neg} {adj} , i think",
    "our dinner was {neg} {adj} last night",
    "the music sounded {neg} {adj}",
    "his new album is {neg} {adj} in my opinion",
    "the service here was {neg} {adj}",
    "she said the trip was {neg} {adj}",
    "the weather today is {neg} {adj}",
    "really , the ending felt {neg} {adj}",
    "the acting in this series was {neg} {adj}",
    "the price was {neg} {adj} for what we got",
    "the teacher was {neg} {adj} to the students",
    "it is {neg} {adj} as far as we can tell",
    "to be fair the sequel was {neg} {adj}",
]
HELDOUT_TEMPLATES = [
    "honestly the show felt {neg} {adj}",
    "that book seemed {neg} {adj} to me",
    "my friends said the concert was {neg} {adj}",
    "overall the game is {neg} {adj}",
    "the hotel room looked {neg} {adj}",
]


def label(adjective, negation):
    positive = adjective in POSITIVE
    return "positive" if positive != bool(negation) else "negative"


def lines(templates):
    for template, adjective, negation in itertools.product(templates, POSITIVE + NEGATIVE, NEGATIONS):
        text = " ".join(template.format(neg=negation, adj=adjective).split())
        yield f"{label(adjective, negation)}\t{text}\n"


def main(folder):
    out = pathlib.Path(folder)
    (out / "negation_train.tsv").write_text("".join(lines(TRAIN_TEMPLATES)))
    (out / "negation_heldout.tsv").write_text("".join(lines(HELDOUT_TEMPLATES)))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parent)
