"""attn embed --model and attn neighbors --model: a trained model's contextual embeddings (the
output of its last attention block per token, before pooling) in every output format, --batch,
unknown words, causality, and the errors of the CLI contract. The models are trained here, from
tests/data only."""
import csv
import io
import json
import math
import os
import struct

import numpy as np
import pytest

from conftest import ATTN, one_error_line, run_attn

DATA = os.path.join(os.path.dirname(__file__), "..", "data")
NEGATION = os.path.join(DATA, "negation_train.tsv")
TOY = os.path.join(DATA, "seed003_toy.txt")


def model_config(path):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        return json.loads(json.loads(f.read(n))["__metadata__"]["config"])


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """{"classify": path, "next-word": path}: the negation classifier (default GloVe, 2 epochs)
    and seed 003's next-word toy (causal attention)."""
    if not os.path.exists(ATTN):
        pytest.fail(f"attn binary not found at {ATTN} (build first, or set ATTN_BIN)")
    folder = tmp_path_factory.mktemp("models")
    out = {"classify": folder / "negation.safetensors", "next-word": folder / "toy.safetensors"}
    r = run_attn("train", "--task", "classify", "--data", NEGATION, "--epochs", "2", "--seed", "1",
                 "-o", out["classify"])
    assert r.code == 0, r.err
    r = run_attn("train", "--task", "next-word", "--data", TOY, "--epochs", "30", "--seed", "1",
                 "-o", out["next-word"])
    assert r.code == 0, r.err
    return out


def embed_json(attn, model, text):
    r = attn("embed", "--model", model, "--format", "json", text)
    assert r.code == 0, r.err
    return json.loads(r.out)


@pytest.mark.parametrize("task,text,tokens", [
    ("classify", "The movie was NOT good.", ["the", "movie", "was", "not", "good", "."]),
    ("next-word", "not like hate", ["not", "like", "hate"]),
])
def test_json_has_a_row_per_token_of_the_models_width(attn, models, task, text, tokens):
    j = embed_json(attn, models[task], text)
    assert set(j) == {"tokens", "embeddings", "unknown", "model", "dim"}
    dim = model_config(models[task])["dim"]
    assert j["tokens"] == tokens and j["unknown"] == []
    assert j["model"] == str(models[task]) and j["dim"] == dim == 100
    e = np.array(j["embeddings"], np.float64)
    assert e.shape == (len(tokens), dim)
    assert np.all(np.isfinite(e)) and np.abs(e).max() > 0


def test_unknown_words_are_listed_left_out_and_warned(attn, models):
    r = attn("embed", "--model", models["classify"], "--format", "json", "the zzqxv movie qqzzx")
    assert r.code == 0, r.err
    j = json.loads(r.out)
    assert j["tokens"] == ["the", "movie"] and j["unknown"] == ["zzqxv", "qqzzx"]
    assert r.err == "warning: left out of attention, not known to the model: zzqxv qqzzx\n"
    # Left out means left out: the same rows as the text without them.
    np.testing.assert_array_equal(j["embeddings"], embed_json(attn, models["classify"], "the movie")["embeddings"])


def test_next_word_embeddings_are_causal_and_classify_ones_are_not(attn, models):
    # Row t of a next-word model has seen tokens ≤ t only: a longer text keeps the earlier rows.
    short = embed_json(attn, models["next-word"], "not like")["embeddings"]
    long = embed_json(attn, models["next-word"], "not like hate")["embeddings"]
    assert long[:2] == short
    short = embed_json(attn, models["classify"], "the movie")["embeddings"]
    long = embed_json(attn, models["classify"], "the movie was bad")["embeddings"]
    assert long[0] != short[0] and long[1] != short[1]


def test_text_csv_and_npy_agree_with_json(attn, models, tmp_path):
    model, text = models["classify"], "the movie, was not bad"
    j = embed_json(attn, model, text)
    want = np.array(j["embeddings"], np.float32)

    r = attn("embed", "--model", model, text)  # text is the default format
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    assert [line.split(" ")[0] for line in lines] == j["tokens"]
    values = np.array([[float(x) for x in line.split(" ")[1:]] for line in lines])
    np.testing.assert_allclose(values, want, rtol=0, atol=5e-7)  # printed with 6 decimals

    r = attn("embed", "--model", model, "--format", "csv", text)
    assert r.code == 0, r.err
    rows = list(csv.reader(io.StringIO(r.out)))
    assert rows[0] == ["token"] + [f"d{i}" for i in range(100)]
    assert [row[0] for row in rows[1:]] == j["tokens"]  # "," quoted and read back
    # The shortest decimal that reads back as the same float32: exact.
    np.testing.assert_array_equal(np.array([row[1:] for row in rows[1:]], np.float32), want)

    r = attn("embed", "--model", model, "-o", tmp_path / "e.npy", text)  # npy from the extension
    assert r.code == 0, r.err
    a = np.load(tmp_path / "e.npy")
    assert a.dtype == np.float32 and a.shape == (len(j["tokens"]), 100)
    np.testing.assert_array_equal(a, want)


def test_batch_gives_one_record_per_line(attn, models, tmp_path):
    model = models["next-word"]
    lines = ["not like", "", "zzqxv", "do hate zzqxv"]
    batch = tmp_path / "lines.txt"
    batch.write_text("\n".join(lines) + "\n")
    singles = {text: embed_json(attn, model, text) for text in ["not like", "do hate zzqxv"]}

    r = attn("embed", "--model", model, "--batch", batch, "--format", "json")
    assert r.code == 0, r.err
    records = [json.loads(line) for line in r.out.splitlines()]
    assert [rec["line"] for rec in records] == [1, 2, 3, 4]
    assert [rec["text"] for rec in records] == lines
    for rec in records:
        assert set(rec) == {"line", "text", "tokens", "embeddings", "unknown", "model", "dim"}
        assert rec["dim"] == 100 and rec["model"] == str(model)
        if rec["text"] in singles:
            want = singles[rec["text"]]
            assert rec["tokens"] == want["tokens"] and rec["embeddings"] == want["embeddings"]
            assert rec["unknown"] == want["unknown"]
    assert records[1]["tokens"] == [] and records[1]["embeddings"] == []
    assert records[2]["tokens"] == [] and records[2]["unknown"] == ["zzqxv"]
    assert "line 3: no token is known to the model (an empty record): zzqxv" in r.err
    assert "line 4: left out of attention, not known to the model: zzqxv" in r.err

    r = attn("embed", "--model", model, "--batch", batch, "--format", "csv")
    assert r.code == 0, r.err
    rows = list(csv.reader(io.StringIO(r.out)))
    assert rows[0][:3] == ["line", "token", "d0"] and len(rows[0]) == 102
    assert [(row[0], row[1]) for row in rows[1:]] == [("1", "not"), ("1", "like"), ("4", "do"), ("4", "hate")]
    np.testing.assert_array_equal(np.array([row[2:] for row in rows[1:3]], np.float32),
                                  np.array(singles["not like"]["embeddings"], np.float32))

    r = attn("embed", "--model", model, "--batch", batch, "-o", tmp_path / "out.txt")
    assert r.code == 0, r.err
    # Each record's rows, then one blank line: record k is input line k.
    text = (tmp_path / "out.txt").read_text()
    assert text.endswith("\n")
    records, rows = [], []
    for row in text.split("\n")[:-1]:
        if row:
            rows.append(row.split(" ")[0])
        else:
            records.append(rows)
            rows = []
    assert rows == [] and records == [["not", "like"], [], [], ["do", "hate"]]


def test_batch_from_standard_input(attn, models):
    r = attn("embed", "--model", models["next-word"], "--batch", "-", "--format", "json",
             stdin="not like\r\ndo\n")
    assert r.code == 0, r.err
    assert [json.loads(line)["tokens"] for line in r.out.splitlines()] == [["not", "like"], ["do"]]


@pytest.mark.parametrize("extra,code,message", [
    (["--vectors", "v.txt"], 1, "excludes"),
    (["--scale", "none"], 1, "excludes"),
    (["--batch", "lines.txt", "--format", "npy"], 1, "npy holds a single array"),
    (["--strict"], 1, "unknown token 'zzqxv' (not known to the model"),
])
def test_usage_errors(attn, models, tmp_path, extra, code, message):
    (tmp_path / "lines.txt").write_text("not like\n")
    (tmp_path / "v.txt").write_text("not 1 2\n")
    args = [a if a not in ("v.txt", "lines.txt") else tmp_path / a for a in extra]
    if "--batch" not in extra:
        args.append("not zzqxv like")
    r = attn("embed", "--model", models["next-word"], *args, "-o", tmp_path / "out.json")
    assert r.code == code, r.err
    assert message in one_error_line(r)
    assert not (tmp_path / "out.json").exists()


def test_no_known_word_is_a_usage_error(attn, models, tmp_path):
    r = attn("embed", "--model", models["classify"], "-o", tmp_path / "out.json", "zzqxv qqzzx")
    assert r.code == 1
    assert one_error_line(r) == "error: no word of the text is known to the model"
    assert list(tmp_path.iterdir()) == []


def test_missing_or_broken_model_is_an_input_error_and_writes_nothing(attn, tmp_path):
    missing = tmp_path / "missing.safetensors"
    r = attn("embed", "--model", missing, "-o", tmp_path / "out.json", "the movie")
    assert r.code == 2
    assert one_error_line(r).startswith(f"error: {missing}: ")
    assert r.err.count("\n") == 1 and r.out == ""
    broken = tmp_path / "broken.safetensors"
    broken.write_bytes(b"\x02\x00\x00\x00\x00\x00\x00\x00{}")
    r = attn("embed", "--model", broken, "-o", tmp_path / "out.npy", "the movie")
    assert r.code == 2
    assert one_error_line(r) == f"error: {broken}: not an attn text model: no 'format' in __metadata__"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["broken.safetensors"]


def test_strict_batch_stops_at_the_line_and_writes_nothing(attn, models, tmp_path):
    batch = tmp_path / "lines.txt"
    batch.write_text("not like\ndo zzqxv\n")
    out = tmp_path / "out.json"
    out.write_text("previous")
    r = attn("embed", "--model", models["next-word"], "--batch", batch, "--strict", "-o", out)
    assert r.code == 2
    assert one_error_line(r) == (f"error: {batch}: unknown token 'zzqxv' (not known to the model "
                                 f"{models['next-word']}); drop --strict to leave unknown tokens "
                                 "out, line 2")
    assert out.read_text() == "previous"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lines.txt", "out.json"]


def test_batch_shares_lines_among_threads_and_writes_what_one_thread_writes(attn, models, tmp_path):
    """--batch gives a block of a file's lines to the threads, a line each: records, warnings (in
    line order, the first ten named) and a --strict error must be one thread's, in every format,
    across blocks (2 threads: 32 lines a block)."""
    words = ["the movie was good", "not bad at all", "", "zzqxv it was fine", "i did not like it",
             "a long film , but the acting was good and the story was not bad", "qqqzz"]
    lines = [words[(3 * i) % len(words)] + (" very" * (i % 5)) for i in range(90)]
    batch = tmp_path / "lines.txt"
    batch.write_text("\n".join(lines) + "\n")
    model = models["classify"]
    runs = [("json",), ("csv",), ("text",), ("json", "--pool", "mean"), ("npy", "--pool", "max")]
    for fmt, *extra in runs:
        got = {}
        for threads in ("1", "2"):
            out = tmp_path / f"out{threads}.{fmt}"
            r = attn("embed", "--model", model, "--batch", batch, "--format", fmt, *extra,
                     "--threads", threads, "-o", out)
            assert r.code == 0, r.err
            got[threads] = (out.read_bytes(), r.err)
        assert got["1"] == got["2"], (fmt, extra)
        assert "more lines were blank or had tokens left out" in got["2"][1]
    # --strict: the first unknown token in a later block (line 36), after blank lines' notes.
    lines = [words[i % 3] for i in range(35)] + ["it was zzqxv"] + [words[0]] * 20 + ["qqqzz"]
    batch.write_text("\n".join(lines) + "\n")
    for threads in ("1", "2"):
        r = attn("embed", "--model", model, "--batch", batch, "--strict", "--threads", threads,
                 "-o", tmp_path / "strict.json")
        assert r.code == 2 and not (tmp_path / "strict.json").exists()
        assert r.err.splitlines()[-1].endswith("line 36"), r.err


# ---- neighbors --model ----

def cosine(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(a @ b / math.sqrt((a @ a) * (b @ b)))


def test_neighbors_compares_the_contextual_vector_with_words_alone(attn, models):
    model, text = models["classify"], "the movie was not good"
    r = attn("neighbors", "--model", model, "--top", "4", "--word", "good", text)
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    assert lines[0] == f'"good" in: {text}'
    # The 50,000 default words and the learned row for "i", which the default vectors lack.
    assert lines[1].startswith(f"model: {model} (classify, 4 heads, 100 dims); alone: each of "
                               "its 50001 words as a one-token text")
    assert lines[3].split() == ["alone", '"good"', "contextual", '"good"']
    ranked = [line.split() for line in lines[4:8]]
    assert [row[0] for row in ranked] == ["1", "2", "3", "4"] and lines[8] == ""
    assert all("good" not in row for row in ranked)  # the word itself is left out

    # The numbers, from attn embed --model: W in the text, and each word as a one-token text.
    in_text = embed_json(attn, model, text)
    good = in_text["embeddings"][in_text["tokens"].index("good")]
    alone = {w: embed_json(attn, model, w)["embeddings"][0] for w in ["good", "the", "movie", "was", "not"]}
    checked = 0
    for row in ranked:
        for word, similarity, vector in [(row[1], row[2], alone["good"]), (row[4], row[5], good)]:
            j = embed_json(attn, model, word)
            if j["tokens"] != [word]:  # a vocabulary word the tokenizer would split
                continue
            want = cosine(vector, j["embeddings"][0])
            assert abs(float(similarity) - want) < 6e-5, (word, similarity, want)
            checked += 1
    assert checked >= 6

    assert lines[9] == '  "good" moved toward the words of its text (cosine with each word alone):'
    assert lines[10].split() == ["word", "alone", "contextual", "change"]
    table = {row[0]: [float(x) for x in row[1:]] for row in (line.split() for line in lines[11:])}
    assert sorted(table) == ["movie", "not", "the", "was"]
    for word, (before, after, change) in table.items():
        assert abs(before - cosine(alone["good"], alone[word])) < 6e-5, word
        assert abs(after - cosine(good, alone[word])) < 6e-5, word
        assert abs(change - (after - before)) < 2e-4, word
    changes = [change for _, _, change in table.values()]
    assert changes == sorted(changes, reverse=True)


def test_neighbors_of_a_next_word_model_says_causal(attn, models):
    r = attn("neighbors", "--model", models["next-word"], "--top", "2", "--word", "like", "not like")
    assert r.code == 0, r.err
    assert "(next-word, 4 heads, 100 dims, causal)" in r.out.splitlines()[1]
    assert r.out.splitlines()[-1].split()[0] == "not"


@pytest.mark.parametrize("extra,word,text,code,message", [
    (["--vectors", "v.txt"], "like", "not like", 1, "excludes"),
    (["--scale", "none"], "like", "not like", 1, "excludes"),
    ([], "zzqxv", "not zzqxv like", 1, "'zzqxv' is not known to the model"),
    ([], "hate", "not like", 1, "'hate' is not a token of the text the model reads"),
    ([], "not like", "not like", 1, "--word must be a single word"),
])
def test_neighbors_errors(attn, models, extra, word, text, code, message):
    r = attn("neighbors", "--model", models["next-word"], *extra, "--word", word, text)
    assert r.code == code, r.err
    assert message in one_error_line(r)
    assert r.out == ""


def test_neighbors_missing_model(attn, tmp_path):
    r = attn("neighbors", "--model", tmp_path / "none.safetensors", "--word", "bank", "river bank")
    assert r.code == 2
    assert one_error_line(r).startswith(f"error: {tmp_path / 'none.safetensors'}: ")
