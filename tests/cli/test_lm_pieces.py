"""attn train --task lm --pieces N (issue #54: the pieces are a tokenizer of their own, not
translation's alone): a cased subword language model. The pieces are stored in the model file;
tokenize shows them, generate writes them back as text, eval scores every piece; a resumed run
relearns the same pieces and writes the uninterrupted file; options that belong to words are
refused; a damaged piece table is one input error."""
import json
import os
import struct

import pytest

from conftest import ATTN, one_error_line, run_attn
from test_language_model import corpus_text, tensors

SMALL = ["--layers", "1", "--dim", "32", "--heads", "2", "--context", "16", "--batch", "8", "--epochs", "3",
         "--seed", "1", "--threads", "1"]


def train(data, out, *extra):
    return run_attn("train", "--task", "lm", "--pieces", "60", "--data", data, "-o", out, *SMALL, *extra)


def metadata(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    return json.loads(b[8:8 + n])["__metadata__"]


def with_metadata(path, out, key, value):
    """The model file at path with one metadata value replaced, written to out."""
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    head = json.loads(b[8:8 + n])
    head["__metadata__"][key] = value
    h = json.dumps(head).encode()
    out.write_bytes(struct.pack("<Q", len(h)) + h + b[8 + n:])


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    if not os.path.exists(ATTN):
        pytest.fail(f"attn binary not found at {ATTN} (build first, or set ATTN_BIN)")
    path = tmp_path_factory.mktemp("lm-pieces") / "corpus.txt"
    # Cased text: "Then" starts every second sentence, "Anna" is a name.
    path.write_text(corpus_text().replace("my neighbour", "Anna"))
    return path


@pytest.fixture(scope="module")
def model(corpus, tmp_path_factory):
    out = tmp_path_factory.mktemp("lm-pieces-model") / "lm.safetensors"
    r = train(corpus, out)
    assert r.code == 0, r.err
    return out, r.err


def test_the_model_file_holds_its_pieces_and_learns(model):
    out, err = model
    meta = metadata(out)
    config = json.loads(meta["config"])
    assert config["task"] == "lm" and 8 <= config["pieces"] <= 60, config
    assert len(meta["pieces"]) > 100  # SentencePiece's model, base64
    assert config["embed_dim"] == 32  # learned rows, as wide as --dim
    epochs = [l for l in err.splitlines() if l.startswith("epoch ")]
    losses = [float(l.split("loss")[1].split()[0]) for l in epochs]
    assert len(losses) == 3 and losses[-1] < 0.8 * losses[0], err


def test_tokenize_shows_cased_pieces(model):
    r = run_attn("tokenize", "--model", model[0], "Then Anna sat on the mat.")
    assert r.code == 0, r.err
    tokens = r.out.split()
    assert tokens[-1] == "<eos>" and tokens[0].startswith("\u2581Then"), r.out
    assert any("A" in t for t in tokens[1:]), r.out  # cased: "Anna" is not lowercased
    assert "".join(tokens[:-1]).replace("\u2581", " ").strip() == "Then Anna sat on the mat.", r.out


def test_generate_writes_text_and_repeats_with_a_seed(model):
    a = run_attn("generate", "--model", model[0], "--temperature", "0", "--max-words", "12", "Then Anna")
    b = run_attn("generate", "--model", model[0], "--temperature", "0", "--max-words", "12", "Then Anna")
    assert a.code == 0 and a.out == b.out, a.err
    assert a.out.startswith("Then Anna") and "\u2581" not in a.out, a.out
    assert "read as <unk>" not in a.err, a.err  # every piece of the prompt is known
    beam = run_attn("generate", "--model", model[0], "--beam", "3", "--max-words", "8", "Then")
    assert beam.code == 0 and beam.out.startswith("Then") and "\u2581" not in beam.out, beam.err


def test_eval_scores_every_piece(model, tmp_path):
    text = tmp_path / "held.txt"
    text.write_text("Then the cat sat on the mat.\n")
    r = run_attn("eval", "--model", model[0], "--data", text)
    assert r.code == 0, r.err
    j = json.loads(r.out)
    pieces = run_attn("tokenize", "--model", model[0], "--data", text).out.split()
    assert j["tokens"] == len(pieces) and j["unknown_share"] == 0, (j, pieces)
    assert abs(j["perplexity"] - 2.718281828459045 ** j["loss"]) < 1e-6 * j["perplexity"]


def test_a_resumed_run_writes_the_uninterrupted_file(corpus, model, tmp_path):
    part = tmp_path / "part.safetensors"
    r = train(corpus, part, "--stop-after-steps", "7")
    assert r.code == 0 and not part.exists(), r.err
    r = train(corpus, part, "--resume")
    assert r.code == 0, r.err
    assert tensors(model[0]) == tensors(part)


def test_options_for_words_are_refused_and_nothing_is_written(corpus, tmp_path):
    out = tmp_path / "never.safetensors"
    vectors = os.path.join(os.path.dirname(__file__), "..", "data", "fixtures", "vectors8.txt")
    for args, phrase in [
        (["--task", "masked-word", "--pieces", "60"], "--pieces is for"),
        (["--task", "lm", "--pieces", "60", "--vectors", vectors], "--pieces learns"),
        (["--task", "lm", "--pieces", "3"], "--pieces 3"),
    ]:
        r = run_attn("train", *args, "--data", corpus, "-o", out)
        assert r.code == 1 and phrase in one_error_line(r), (args, r.err)
        assert not out.exists()


def test_a_damaged_piece_table_is_one_input_error(model, tmp_path):
    for value, phrase in [("%%% not base64", "not base64"), ("bm90IGEgbW9kZWw=", "not a SentencePiece model")]:
        bad = tmp_path / "bad.safetensors"
        with_metadata(model[0], bad, "pieces", value)
        for command in (["generate", "--model", bad, "Then"], ["tokenize", "--model", bad, "Then"]):
            r = run_attn(*command)
            assert r.code == 2 and phrase in one_error_line(r) and "bad.safetensors" in one_error_line(r), r.err


def test_embed_batch_reads_the_pieces(model, tmp_path):
    # Each line as the model reads it: read as words, its words would be "not known" to the model.
    lines = tmp_path / "lines.txt"
    lines.write_text("Then the cat sat.\nthe dog ran.\n")
    r = run_attn("embed", "--model", model[0], "--batch", lines, "--format", "json")
    assert r.code == 0 and "not known" not in r.err and "empty record" not in r.err, r.err
    records = [json.loads(l) for l in r.out.splitlines()]
    assert len(records) == 2 and all(len(j["embeddings"]) > 1 for j in records), r.out[:300]
    assert records[0]["tokens"][0].startswith("\u2581Then") or records[0]["tokens"][0] == "<eos>", records[0]["tokens"]
