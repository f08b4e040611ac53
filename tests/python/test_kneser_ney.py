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
