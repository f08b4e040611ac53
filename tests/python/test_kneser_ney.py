"""bench/peers/kneser_ney.py, the n-gram baseline of the language-model benchmark: a probability
distribution over the vocabulary in every context, and lower perplexity on text like its own."""
import importlib.util
import math
import os
import random

import pytest

attn = pytest.importorskip("attn")

HERE = os.path.dirname(__file__)
spec = importlib.util.spec_from_file_location(
    "kneser_ney", os.path.join(HERE, "..", "..", "bench", "peers", "kneser_ney.py"))
kn = importlib.util.module_from_spec(spec)
spec.loader.exec_module(kn)

TEXT = ["The cat sat on the mat.", "The dog sat on the log.", "A cat saw the dog.",
        "The dog didn't see the cat on the mat.", "It's a cat, not a dog."] * 3


def trained(order, vocab=100):
    tokens = [attn.tokenize(line) for line in TEXT]
    vocabulary = kn.make_vocabulary(tokens, vocab)
    model = kn.KneserNey(order, vocabulary)
    model.train([kn.in_vocabulary(t, vocabulary) for t in tokens])
    return model, vocabulary


def test_attn_tokenize_is_the_commands_tokenizer():
    assert attn.tokenize("The dog didn't see CAFÉ, 3.5 km.") == \
        ["the", "dog", "did", "n't", "see", "café", ",", "3.5", "km", "."]


@pytest.mark.parametrize("order", [1, 2, 3, 5])
def test_every_context_gives_a_distribution_over_the_vocabulary(order):
    model, vocabulary = trained(order)
    contexts = [[], ["the"], ["sat", "on", "the"], ["<s>", "<s>", "the", "cat"],
                ["never", "seen", "words", "here"], ["the", "dog", "<unk>", "the"]]
    for context in contexts:
        total = sum(model.probability(w, context[-(order - 1):] if order > 1 else []) for w in vocabulary)
        assert total == pytest.approx(1.0, abs=1e-9), context
    assert all(0 < model.discounts[m] <= 1 for m in range(1, order + 1))


def test_a_longer_context_helps_on_text_like_the_training_text():
    test = [kn.in_vocabulary(attn.tokenize(line), trained(1)[1]) for line in TEXT[:5]]
    shuffled = [random.Random(1).sample(t[:-1], len(t) - 1) + [t[-1]] for t in test]
    perplexity = {}
    for order in (1, 3):
        model, _ = trained(order)
        loss, tokens, _ = model.score(test)
        perplexity[order] = math.exp(loss / tokens)
        loss, tokens, _ = model.score(shuffled)
        perplexity[order, "shuffled"] = math.exp(loss / tokens)
    assert perplexity[3] < perplexity[1] < perplexity[3, "shuffled"]


def test_words_past_the_vocabulary_are_the_unknown_token_and_count():
    model, vocabulary = trained(3, vocab=5)
    assert len(vocabulary) == 7  # the 5 most frequent words, <unk> and <eos>
    loss, tokens, unknown = model.score([kn.in_vocabulary(attn.tokenize("a zebra sat"), vocabulary)])
    assert tokens == 4 and unknown == 2 and math.isfinite(loss)


spec_arrays = importlib.util.spec_from_file_location(
    "kneser_ney_arrays", os.path.join(HERE, "..", "..", "bench", "peers", "kneser_ney_arrays.py"))
kna = importlib.util.module_from_spec(spec_arrays)
spec_arrays.loader.exec_module(kna)


@pytest.mark.parametrize("order", [1, 2, 3, 4, 5])
def test_the_array_version_gives_the_dictionary_versions_probabilities(order, tmp_path):
    # kneser_ney_arrays.py (for 40M words) against kneser_ney.py (the readable one), token by
    # token, on held-out text with unseen contexts and <unk>; a vocabulary of 12 leaves many <unk>.
    model, vocabulary = trained(order, vocab=12)
    lines = lambda texts: "".join(" ".join(kn.in_vocabulary(attn.tokenize(t), vocabulary)) + "\n" for t in texts)
    train, test = tmp_path / "train.tok", tmp_path / "test.tok"
    train.write_text(lines(TEXT))
    test.write_text(lines(["The cat saw a log on the mat.", "A dog, a cat and a zebra.", "The the the."]))
    index = {kna.START: 0}
    train_ids, train_starts = kna.read_ids(str(train), index)
    test_ids, test_starts = kna.read_ids(str(test), index)
    arrays = kna.ArrayKneserNey(order, len(vocabulary), max(1, (len(index) - 1).bit_length()), 0)
    arrays.train(train_ids, train_starts)
    got = arrays.log_probabilities(test_ids, test_starts)
    words = {i: w for w, i in index.items()}
    want, k = [], 0
    for start in list(test_starts) + [len(test_ids)]:
        if start == 0:
            continue
        paragraph = [words[int(i)] for i in test_ids[k:start]]
        padded = [kn.START] * (order - 1) + paragraph
        want += [math.log(model.probability(padded[i], padded[i - order + 1:i])) for i in range(order - 1, len(padded))]
        k = start
    assert len(got) == len(want) == len(test_ids)
    assert max(abs(g - w) for g, w in zip(got, want)) < 1e-9
