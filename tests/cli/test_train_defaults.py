"""attn train with no options learns (issue #12): seed 003's toy in both embedding modes, a
negation spelled only "n't" (a token the embedded vectors lack, so it needs a learned row),
the validation split taken from the training data, and the best epoch kept."""
import json
import os

from conftest import ATTN  # noqa: F401  (the attn fixture runs it)

DATA = os.path.join(os.path.dirname(__file__), "..", "data")
TOY = os.path.join(DATA, "seed003_toy.txt")
TOY_ANSWERS = {"not like": "hate", "not hate": "like", "do like": "like", "do hate": "hate"}


def predictions(attn, model):
    out = {}
    for text in TOY_ANSWERS:
        r = attn("predict", "--model", model, text)
        assert r.code == 0, r.err
        out[text] = r.out.splitlines()[0]
    return out


def test_seed_003_toy_with_no_options(attn, tmp_path):
    model = tmp_path / "toy.safetensors"
    r = attn("train", "--task", "next-word", "--data", TOY, "-o", model)
    assert r.code == 0, r.err
    assert "no validation: 4 lines are too few" in r.err
    assert predictions(attn, model) == TOY_ANSWERS


def test_seed_003_toy_learned_embeddings_repeated_lines(attn, tmp_path):
    # The failing case: --learn-embeddings 16 on the four lines repeated 8 times.
    data = tmp_path / "toy8.txt"
    with open(TOY) as f:
        data.write_text(f.read() * 8)
    model = tmp_path / "toy.safetensors"
    r = attn("train", "--task", "next-word", "--data", data, "--learn-embeddings", "16", "-o", model)
    assert r.code == 0, r.err
    assert predictions(attn, model) == TOY_ANSWERS


POSITIVE = ["good", "great", "excellent", "wonderful", "fantastic", "enjoyable", "brilliant",
            "pleasant", "superb", "delightful"]
NEGATIVE = ["bad", "terrible", "awful", "boring", "horrible", "dull", "poor", "dreadful",
            "disappointing", "mediocre"]
# "{v}" is a verb that takes the clitic: "was" → "wasn't", which the tokenizer splits into
# "was" "n't", as the Penn Treebank (and GloVe's vocabulary) does.
TRAIN = ["the movie {v} {adj}", "this film {v} {adj}", "the plot {v} {adj} , i think",
         "our dinner {v} {adj} last night", "the music {v} {adj}", "his new album {v} {adj}",
         "the service here {v} {adj}", "the trip {v} {adj} for us", "the weather today {v} {adj}",
         "the ending {v} {adj}", "the acting in this series {v} {adj}", "the price {v} {adj}"]
HELDOUT = ["honestly the show {v} {adj}", "that book {v} {adj} to me",
           "overall the game {v} {adj}", "the hotel room {v} {adj}"]


def negation_lines(templates):
    for template in templates:
        for adj in POSITIVE + NEGATIVE:
            for verb, negated in (("was", False), ("is", False), ("wasn't", True), ("isn't", True)):
                label = "positive" if (adj in POSITIVE) != negated else "negative"
                yield f"{label}\t{template.format(v=verb, adj=adj)}\n"


def test_negation_spelled_only_nt_is_learned_with_defaults(attn, tmp_path):
    train, heldout = tmp_path / "train.tsv", tmp_path / "heldout.tsv"
    train.write_text("".join(negation_lines(TRAIN)))
    heldout.write_text("".join(negation_lines(HELDOUT)))
    model = tmp_path / "nt.safetensors"
    r = attn("train", "--task", "classify", "--data", train, "-o", model)
    assert r.code == 0, r.err
    # 960 lines: 96 held out for validation, and "n't" (not in the embedded vectors) gets a row.
    assert f"validated on 96 lines held out from {train}" in r.err
    assert "words without a pre-trained vector got learned rows" in r.err
    assert "kept epoch" in r.err
    r = attn("eval", "--model", model, "--data", heldout)
    assert r.code == 0, r.err
    result = json.loads(r.out)
    assert result["n"] == 320 and result["accuracy"] >= 0.95, result
    for text, want in [("my sister's cake wasn't delightful", "negative"),
                       ("the new phone isn't terrible", "positive"),
                       ("the new phone is terrible", "negative")]:
        r = attn("predict", "--model", model, text)
        assert r.code == 0 and r.out.splitlines()[0] == want, (text, r.out, r.err)


def test_seeds_model_without_new_words_cannot_see_nt(attn, tmp_path):
    # The same data with --min-count 0 (words without a vector skipped, as before): "wasn't good"
    # reads as "was good", so the model cannot tell the negation.
    train, heldout = tmp_path / "train.tsv", tmp_path / "heldout.tsv"
    train.write_text("".join(negation_lines(TRAIN)))
    heldout.write_text("".join(negation_lines(HELDOUT)))
    model = tmp_path / "nt.safetensors"
    r = attn("train", "--task", "classify", "--data", train, "--min-count", "0", "-o", model)
    assert r.code == 0, r.err
    assert "tokens without an embedding skipped (e.g. n't" in r.err
    result = json.loads(attn("eval", "--model", model, "--data", heldout).out)
    assert result["accuracy"] <= 0.6, result
