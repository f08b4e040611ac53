"""The attn CLI contract, end to end: outputs, formats and every error path."""
import json
import os
import struct

import numpy as np
import pytest

from conftest import one_error_line, read_attnvec, write_safetensors

DATA = os.path.join(os.path.dirname(__file__), "..", "..", "data", "glove-6b-100d-50k.attnvec")

# Seed 000's five words and their 3-d vectors, as a GloVe text file.
SEED_E = {"money": [0.1, 0.2, 0.3], "bank": [0.4, 0.5, 0.6], "grows": [0.7, 0.8, 0.9],
          "river": [0.2, 0.1, 0.4], "flows": [0.5, 0.3, 0.2]}


@pytest.fixture
def seed_vectors(tmp_path):
    path = tmp_path / "seed.txt"
    path.write_text("".join(f"{w} {' '.join(map(str, v))}\n" for w, v in SEED_E.items()))
    return path


def softmax_rows(s):
    e = np.exp(s - s.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


# ---- embed ----

def test_embed_json_matches_numpy_on_default_vectors(attn):
    r = attn("embed", "--format", "json", "He sat by the river bank.")
    assert r.code == 0, r.err
    out = json.loads(r.out)
    assert out["tokens"] == ["he", "sat", "by", "the", "river", "bank", "."]
    words, table = read_attnvec(DATA)
    index = {w: i for i, w in enumerate(words)}
    e = table[[index[t] for t in out["tokens"]]]
    a = softmax_rows(e @ e.T / np.sqrt(100))
    c = a @ e
    # float32 results of double-accumulated sums: a few float32 ulps.
    np.testing.assert_allclose(np.array(out["attention"]), a, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(np.array(out["embeddings"]), c, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.array(out["attention"]).sum(axis=1), 1.0, atol=1e-6)
    assert out["unknown"] == []


NUMBER_WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"]


def test_numbers_read_as_the_mean_of_the_number_words(attn):
    # The embedded vectors have no number rows; a number takes the mean of "zero" … "ten" and
    # shows as itself. A word that is not a number is still unknown.
    r = attn("embed", "--format", "json", "in 1990 he paid 3.5 dollars zzqxv 1990s")
    assert r.code == 0, r.err
    out = json.loads(r.out)
    assert out["tokens"] == ["in", "1990", "he", "paid", "3.5", "dollars"]
    assert out["unknown"] == ["zzqxv", "1990s"]
    words, table = read_attnvec(DATA)
    index = {w: i for i, w in enumerate(words)}
    assert "1990" not in index and "3.5" not in index
    number = table[[index[w] for w in NUMBER_WORDS]].mean(axis=0)
    e = np.array([number if t in ("1990", "3.5") else table[index[t]] for t in out["tokens"]])
    a = softmax_rows(e @ e.T / np.sqrt(100))
    np.testing.assert_allclose(np.array(out["attention"]), a, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(np.array(out["embeddings"]), a @ e, rtol=1e-5, atol=1e-6)


def test_embed_text_is_glove_format(attn):
    r = attn("embed", "money bank grows")
    assert r.code == 0, r.err
    lines = r.out.strip().split("\n")
    assert [l.split()[0] for l in lines] == ["money", "bank", "grows"]
    assert all(len(l.split()) == 101 for l in lines)


def test_embed_seed_000_through_the_cli(attn, seed_vectors):
    # Seed 000 uses no scaling. It prints softmax row 1 as [0.1761, 0.2107, 0.2522, 0.1796,
    # 0.1814] and C1 as [0.40505, 0.41471, 0.51435]; the true values are [0.1760, 0.2107, 0.2523,
    # 0.1796, 0.1814] and [0.405105, 0.414776, 0.514415] (the seed rounded e^x to 4 digits
    # before dividing). We check against an independent float64 computation.
    r = attn("embed", "--vectors", seed_vectors, "--scale", "none", "--format", "json",
             "money bank grows river flows")
    assert r.code == 0, r.err
    out = json.loads(r.out)
    e = np.array(list(SEED_E.values()), dtype=np.float32).astype(np.float64)
    a = softmax_rows(e @ e.T)
    np.testing.assert_allclose(np.array(out["attention"]), a, rtol=1e-6)
    np.testing.assert_allclose(np.array(out["embeddings"]), a @ e, rtol=1e-6)


def test_embed_unknown_tokens_left_out_and_listed(attn):
    r = attn("embed", "--format", "json", "the zzqxv bank")
    assert r.code == 0
    out = json.loads(r.out)
    assert out["tokens"] == ["the", "bank"] and out["unknown"] == ["zzqxv"]
    assert "zzqxv" in r.err and r.err.startswith("warning:")
    strict = attn("embed", "--strict", "the zzqxv bank")
    assert strict.code == 1
    assert "zzqxv" in one_error_line(strict)


def test_embed_reads_stdin(attn):
    a = attn("embed", "--format", "json", stdin="river bank\n")
    b = attn("embed", "--format", "json", "-", stdin="river bank")
    c = attn("embed", "--format", "json", "river", "bank")
    assert a.code == b.code == c.code == 0
    assert json.loads(a.out) == json.loads(b.out) == json.loads(c.out)


def test_embed_npy_output(attn, tmp_path):
    out = tmp_path / "c.npy"
    r = attn("embed", "--format", "npy", "-o", out, "money bank grows")
    assert r.code == 0, r.err
    c = np.load(out)
    assert c.dtype == np.float32 and c.shape == (3, 100)
    j = json.loads(attn("embed", "--format", "json", "money bank grows").out)
    np.testing.assert_array_equal(c, np.array(j["embeddings"], dtype=np.float32))


def test_embed_scale_options(attn):
    def attention(scale):
        return np.array(json.loads(attn("embed", "--format", "json", "--scale", scale,
                                        "money bank").out)["attention"])
    sqrt, none, tenth = attention("sqrt"), attention("none"), attention("0.1")
    np.testing.assert_allclose(sqrt, tenth, rtol=1e-6)  # 1/√100
    assert not np.allclose(sqrt, none)


def test_embed_nothing_known_is_a_usage_error(attn):
    r = attn("embed", "zzqxv qqzzv")
    assert r.code == 1
    assert "no token" in one_error_line(r)


# ---- explain ----

def test_explain_shows_every_step_within_100_columns(attn):
    r = attn("explain", "money bank grows")
    assert r.code == 0, r.err
    for title in ["1. E", "2. S = E·Eᵀ", "3. S ×", "4. A = softmax", "5. C = A·E", "row sum"]:
        assert title in r.out
    assert "…" in r.out  # 100-d vectors are shortened
    assert max(len(l) for l in r.out.splitlines()) <= 100


def test_explain_seed_000_scores(attn, seed_vectors):
    r = attn("explain", "--vectors", seed_vectors, "--scale", "none", "money bank grows river flows")
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith("2. S"))
    money_row = lines[start + 2].split()
    # S row 1 = E_money · E_j: 0.14, 0.32, 0.50, 0.16, 0.17 (as seed 000 shows).
    assert money_row == ["money", "0.1400", "0.3200", "0.5000", "0.1600", "0.1700"]


# ---- neighbors ----

def movement(out, word):
    """The 'change' column of the movement table for one word."""
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[0] == word:
            return float(parts[1]), float(parts[2]), float(parts[3])
    raise AssertionError(f"{word} not in movement table:\n{out}")


def test_neighbors_bank_moves_toward_its_context(attn):
    river = attn("neighbors", "--word", "bank", "he sat on the bank of the river")
    money = attn("neighbors", "--word", "bank", "she put the money in the bank")
    assert river.code == 0 and money.code == 0, river.err + money.err
    before, after, change = movement(river.out, "river")
    assert after > before and change > 0
    before, after, change = movement(money.out, "money")
    assert after > before and change > 0
    # Each sentence pulls "bank" toward its own context: the contextual "bank" of the river
    # sentence is nearer to "river" than the one of the money sentence, and the other way round.
    words, table = read_attnvec(DATA)
    vec = {w: table[words.index(w)] for w in ("river", "money")}
    def bank(sentence):
        out = json.loads(attn("embed", "--format", "json", sentence).out)
        return np.array(out["embeddings"][out["tokens"].index("bank")])
    cos = lambda a, b: a @ b / np.linalg.norm(a) / np.linalg.norm(b)
    b_river, b_money = bank("he sat on the bank of the river"), bank("she put the money in the bank")
    assert cos(b_river, vec["river"]) > cos(b_money, vec["river"])
    assert cos(b_money, vec["money"]) > cos(b_river, vec["money"])
    assert "static \"bank\"" in river.out and "contextual \"bank\"" in river.out


def test_neighbors_word_must_be_in_text(attn):
    r = attn("neighbors", "--word", "river", "money bank")
    assert r.code == 1
    assert "not a token of the text" in one_error_line(r)


def test_neighbors_top(attn):
    r = attn("neighbors", "--top", "3", "--word", "bank", "river bank")
    assert r.code == 0
    ranks = [l.split()[0] for l in r.out.splitlines() if l.strip()[:2].strip().isdigit()]
    assert ranks[:3] == ["1", "2", "3"] and "4" not in ranks


def test_neighbors_of_a_number_and_numbers_in_a_batch(attn):
    # A number has no row of its own in the default vectors: nothing to leave out of its list,
    # and its nearest words are the number words it is the mean of.
    r = attn("neighbors", "--top", "3", "--word", "1990", "in 1990 he paid 3.5 dollars")
    assert r.code == 0, r.err
    first = [l.split() for l in r.out.splitlines() if l.strip().startswith("1 ")][0]
    assert first[1] in NUMBER_WORDS and first[4] in NUMBER_WORDS
    assert "3.5" in r.out  # listed among the text's words it moved toward
    both = attn("neighbors", "--model", "builtin", "--top", "3", "--word", "1990",
                "in 1990 he paid 3.5 dollars")
    assert both.code == 0, both.err
    # --batch: a line of numbers alone is a record, not an empty one.
    b = attn("embed", "--batch", "-", "--format", "json", stdin="1990 2\n")
    assert b.code == 0, b.err
    assert json.loads(b.out)["tokens"] == ["1990", "2"]


# ---- vectors ----

def test_vectors_convert_round_trip(attn, seed_vectors, tmp_path):
    out = tmp_path / "seed.attnvec"
    r = attn("vectors", "convert", seed_vectors, out)
    assert r.code == 0, r.err
    words, table = read_attnvec(out)
    assert words == list(SEED_E)
    np.testing.assert_array_equal(table, np.array(list(SEED_E.values()), dtype=np.float32))
    a = attn("embed", "--vectors", seed_vectors, "--format", "json", "money bank")
    b = attn("embed", "--vectors", out, "--format", "json", "money bank")
    assert json.loads(a.out)["embeddings"] == json.loads(b.out)["embeddings"]
    top = tmp_path / "top2.attnvec"
    assert attn("vectors", "convert", "--top", "2", "--dtype", "f16", seed_vectors, top).code == 0
    assert read_attnvec(top)[0] == ["money", "bank"]
    info = attn("vectors", "info", top)
    assert info.code == 0 and "2 words" in info.out


def test_default_is_the_embedded_vectors_wherever_a_vectors_path_goes(attn, tmp_path):
    out = tmp_path / "default.attnvec"
    r = attn("vectors", "convert", "default", out)
    assert r.code == 0, r.err
    words, table = read_attnvec(out)
    embedded_words, embedded = read_attnvec(DATA)
    assert words == embedded_words
    np.testing.assert_array_equal(table, embedded)  # float16 widened to float32: exact
    info = attn("vectors", "info", "default")
    assert info.code == 0 and "<default>" in info.out and "50000 words" in info.out
    plain = attn("embed", "--format", "json", "river bank")
    named = attn("embed", "--vectors", "default", "--format", "json", "river bank")
    assert plain.code == 0 and named.code == 0, named.err
    assert named.out == plain.out


# ---- errors: one line, right exit code, nothing written ----

def test_missing_vectors_file(attn, tmp_path):
    missing = tmp_path / "nope.txt"
    r = attn("embed", "--vectors", missing, "bank")
    assert r.code == 2
    assert one_error_line(r).startswith(f"error: {missing}: ")


def test_malformed_vectors_file(attn, tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("bank 0.1 0.2 0.3\nriver 0.1 0.2\n")
    r = attn("embed", "--vectors", bad, "bank")
    assert r.code == 2
    line = one_error_line(r)
    assert str(bad) in line and "line 2" in line


@pytest.mark.parametrize("args", [
    ["embed", "--bogus", "bank"],
    ["embed", "--scale", "huge", "bank"],
    ["embed", "--format", "xml", "bank"],
    ["frobnicate"],
    [],
    ["neighbors", "bank"],
    ["mha", "--heads", "2"],
    ["sdpa", "--query", "q.npy"],
    ["vectors"],
])
def test_usage_errors_exit_1(attn, args):
    r = attn(*args)
    assert r.code == 1, (args, r.err)
    one_error_line(r)
    assert "usage:" in r.err


def test_every_subcommand_has_help(attn):
    for sub in [[], ["embed"], ["explain"], ["neighbors"], ["mha"], ["sdpa"], ["vectors"],
                ["vectors", "convert"], ["vectors", "info"]]:
        r = attn(*sub, "--help")
        assert r.code == 0 and "Usage" in r.out or "usage" in r.out.lower(), sub


def test_failed_output_leaves_nothing_and_keeps_old_file(attn, tmp_path):
    q = tmp_path / "q.npy"
    np.save(q, np.ones((1, 2, 3, 4), np.float32))
    out = tmp_path / "out.npy"
    out.write_bytes(b"precious")
    bad_key = tmp_path / "k.npy"
    bad_key.write_bytes(b"not an npy file at all")
    r = attn("sdpa", "--query", q, "--key", bad_key, "--value", q, "-o", out)
    assert r.code == 2
    assert str(bad_key) in one_error_line(r)
    assert out.read_bytes() == b"precious"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k.npy", "out.npy", "q.npy"]


def test_output_into_missing_directory(attn, tmp_path):
    q = tmp_path / "q.npy"
    np.save(q, np.ones((1, 1, 2, 4), np.float32))
    out = tmp_path / "no" / "such" / "out.npy"
    r = attn("sdpa", "--query", q, "--key", q, "--value", q, "-o", out)
    assert r.code == 2
    assert str(out) in one_error_line(r)


def test_sdpa_input_errors(attn, tmp_path):
    q = tmp_path / "q.npy"
    np.save(q, np.ones((1, 2, 3, 4), np.float32))
    out = tmp_path / "o.npy"
    cases = {
        "rank.npy": np.ones((2, 3, 4), np.float32),
        "f64.npy": np.ones((1, 2, 3, 4), np.float64),
        "bool.npy": np.ones((1, 2, 3, 4), bool),
        "headsize.npy": np.ones((1, 2, 3, 5), np.float32),
        "gqa.npy": np.ones((1, 3, 3, 4), np.float32),
    }
    for name, array in cases.items():
        path = tmp_path / name
        np.save(path, array)
        r = attn("sdpa", "--query", q, "--key", path, "--value", path, "-o", out)
        assert r.code == 2, (name, r.err)
        one_error_line(r)
        assert not out.exists()
    truncated = tmp_path / "trunc.npy"
    truncated.write_bytes((tmp_path / "rank.npy").read_bytes()[:-5])
    r = attn("sdpa", "--query", truncated, "--key", q, "--value", q, "-o", out)
    assert r.code == 2 and str(truncated) in one_error_line(r)


def write_bf16_safetensors(path, tensors):
    """safetensors with BF16 data: each float32 value's top 16 bits (the values are chosen
    bf16-exact, so nothing is rounded here)."""
    header, blobs, offset = {}, [], 0
    for name, a in sorted(tensors.items()):
        bits = (np.ascontiguousarray(a, dtype="<f4").view("<u4") >> 16).astype("<u2")
        blob = bits.tobytes()
        header[name] = {"dtype": "BF16", "shape": list(a.shape), "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    path.write_bytes(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def test_sdpa_reads_bf16_safetensors_exactly(attn, tmp_path):
    rng = np.random.default_rng(3)
    arrays = {}
    for name, shape in {"q": (1, 2, 7, 16), "k": (1, 2, 9, 16), "v": (1, 2, 9, 8)}.items():
        a = rng.standard_normal(shape).astype(np.float32)
        arrays[name] = (a.view(np.uint32) & 0xFFFF0000).view(np.float32)  # bf16-exact values
        np.save(tmp_path / f"{name}.npy", arrays[name])
        write_bf16_safetensors(tmp_path / f"{name}.safetensors", {name: arrays[name]})
    for dtype in ("bf16", "float32"):
        outs = []
        for ext in ("npy", "safetensors"):
            out = tmp_path / f"o_{dtype}_{ext}.npy"
            r = attn("sdpa", "--dtype", dtype, "--query", tmp_path / f"q.{ext}", "--key",
                     tmp_path / f"k.{ext}", "--value", tmp_path / f"v.{ext}", "-o", out)
            assert r.code == 0, r.err
            outs.append(out.read_bytes())
        assert outs[0] == outs[1], dtype  # the bf16 file in is the same numbers as the .npy
    two = tmp_path / "two.safetensors"
    write_bf16_safetensors(two, {"q": arrays["q"], "extra": arrays["q"]})
    out = tmp_path / "o.npy"
    r = attn("sdpa", "--query", two, "--key", tmp_path / "k.npy", "--value", tmp_path / "v.npy",
             "-o", out)
    assert r.code == 2 and "the query must be the file's only tensor, found 2" in one_error_line(r)
    assert not out.exists()


def test_mha_input_errors(attn, tmp_path):
    e, h = 4, 2
    w = tmp_path / "w.safetensors"
    rng = np.random.default_rng(0)
    write_safetensors(w, {"in_proj_weight": rng.standard_normal((3 * e, e)),
                          "in_proj_bias": rng.standard_normal(3 * e),
                          "out_proj.weight": rng.standard_normal((e, e)),
                          "out_proj.bias": rng.standard_normal(e)})
    q = tmp_path / "q.npy"
    np.save(q, rng.standard_normal((2, 3, e)).astype(np.float32))
    out = tmp_path / "o.npy"
    assert attn("mha", "--weights", w, "--heads", h, "--query", q, "-o", out).code == 0
    out.unlink()

    wrong_e = tmp_path / "q5.npy"
    np.save(wrong_e, np.ones((2, 3, 5), np.float32))
    r = attn("mha", "--weights", w, "--heads", h, "--query", wrong_e, "-o", out)
    assert r.code == 2 and str(wrong_e) in one_error_line(r)

    missing = tmp_path / "missing.safetensors"
    write_safetensors(missing, {"in_proj_weight": np.ones((3 * e, e))})
    r = attn("mha", "--weights", missing, "--heads", h, "--query", q, "-o", out)
    assert r.code == 2 and "out_proj.weight" in one_error_line(r)

    garbage = tmp_path / "garbage.safetensors"
    garbage.write_bytes(b"\xff" * 16)
    r = attn("mha", "--weights", garbage, "--heads", h, "--query", q, "-o", out)
    assert r.code == 2 and str(garbage) in one_error_line(r)

    r = attn("mha", "--weights", w, "--heads", 3, "--query", q, "-o", out)
    assert r.code in (1, 2)
    one_error_line(r)

    mask = tmp_path / "m.npy"
    np.save(mask, np.zeros((2, 4), bool))
    r = attn("mha", "--weights", w, "--heads", h, "--query", q, "--key-padding-mask", mask, "-o", out)
    assert r.code == 2 and str(mask) in one_error_line(r)

    r = attn("mha", "--weights", w, "--heads", h, "--query", q, "--key", q, "-o", out)
    assert r.code == 1
    assert not out.exists()
