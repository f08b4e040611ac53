"""attn.Vectors and attn.embed: the embedded default, files, the pipeline's numbers (checked
against NumPy in float64) and the errors."""
import warnings

import numpy as np
import pytest

attn = pytest.importorskip("attn")

SEED_E = {"money": [0.1, 0.2, 0.3], "bank": [0.4, 0.5, 0.6], "grows": [0.7, 0.8, 0.9]}


@pytest.fixture
def seed_file(tmp_path):
    path = tmp_path / "seed.txt"
    path.write_text("".join(f"{w} {' '.join(map(str, v))}\n" for w, v in SEED_E.items()))
    return path


def softmax_rows(s):
    e = np.exp(s - s.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_default_vectors():
    v = attn.Vectors.load()
    assert len(v) == 50000 and v.dim == 100 and v.source == "<default>"
    assert "bank" in v and "zzqxv" not in v
    bank = v["bank"]
    assert bank.dtype == np.float32 and bank.shape == (100,)
    words = [w for w, _ in v.nearest(bank, 3)]
    assert words[0] == "bank" and "banks" in words
    with pytest.raises(KeyError):
        v["zzqxv"]


def test_default_by_name():
    v = attn.Vectors.load("default")
    assert len(v) == 50000 and v.source == "<default>"
    np.testing.assert_array_equal(v["bank"], attn.Vectors.load()["bank"])


def test_numbers_read_as_the_mean_of_the_number_words():
    v = attn.Vectors.load()
    words = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"]
    mean = np.mean([v[w].astype(np.float64) for w in words], axis=0)
    for n in ["1990", "2", "3.5", "1,000"]:
        assert n in v
        np.testing.assert_allclose(v[n], mean, rtol=1e-6, atol=1e-7)
    assert "1990s" not in v and "zzqxv" not in v
    tokens, _, _ = attn.embed("in 1990 he paid 3.5 dollars", vectors=v)
    assert tokens == ["in", "1990", "he", "paid", "3.5", "dollars"]


def test_embed_matches_numpy():
    v = attn.Vectors.load()
    tokens, c, a = attn.embed("He sat by the river bank.")
    assert tokens == ["he", "sat", "by", "the", "river", "bank", "."]
    e = np.stack([v[t] for t in tokens]).astype(np.float64)
    want_a = softmax_rows(e @ e.T / np.sqrt(100))
    np.testing.assert_allclose(a, want_a, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(c, want_a @ e, rtol=1e-5, atol=1e-6)
    assert c.dtype == a.dtype == np.float32


def test_embed_with_a_file_and_scale(seed_file):
    v = attn.Vectors.load(seed_file)
    assert (len(v), v.dim) == (3, 3)
    tokens, c, a = attn.embed("money bank grows", v, scale="none")
    e = np.array(list(SEED_E.values()), np.float32).astype(np.float64)
    np.testing.assert_allclose(a, softmax_rows(e @ e.T), rtol=1e-6)
    np.testing.assert_allclose(attn.embed("money bank", v, scale=0.5)[2],
                               softmax_rows(e[:2] @ e[:2].T * 0.5), rtol=1e-6)
    np.testing.assert_array_equal(attn.embed("money bank", v, scale="sqrt")[2],
                                  attn.embed("money bank", v)[2])


def test_unknown_tokens_warn_or_raise():
    with pytest.warns(UserWarning, match="zzqxv"):
        tokens, _, _ = attn.embed("the zzqxv bank")
    assert tokens == ["the", "bank"]
    with pytest.raises(attn.UsageError, match="zzqxv"):
        attn.embed("the zzqxv bank", strict=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(attn.UsageError, match="no token"):
            attn.embed("zzqxv qqzzv")


def test_file_errors(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("bank 0.1 0.2 0.3\nriver 0.1 0.2\n")
    with pytest.raises(attn.InputError) as e:
        attn.Vectors.load(bad)
    assert e.value.file == str(bad) and "line 2" in str(e.value) and e.value.kind == "input"
    with pytest.raises(attn.InputError):
        attn.Vectors.load(tmp_path / "missing.txt")
    with pytest.raises(TypeError):
        attn.embed("bank", scale=[1])
    with pytest.raises(attn.UsageError):
        attn.embed("bank", scale="huge")


def test_duplicate_words_warn(tmp_path):
    dup = tmp_path / "dup.txt"
    dup.write_text("bank 1 2\nbank 3 4\n")
    with pytest.warns(UserWarning, match="bank"):
        v = attn.Vectors.load(dup)
    np.testing.assert_array_equal(v["bank"], [1, 2])


def test_docstrings():
    for obj in (attn, attn.sdpa, attn.embed, attn.MultiheadAttention,
                attn.MultiheadAttention.__call__, attn.MultiheadAttention.from_safetensors,
                attn.Vectors, attn.Vectors.load, attn.Error):
        assert obj.__doc__ and len(obj.__doc__) > 40, obj
