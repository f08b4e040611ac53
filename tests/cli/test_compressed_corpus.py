"""Training data read compressed: .xz and .gz give the model the plain file gives, a resumed run
on an .xz corpus writes the uninterrupted file, and damaged data is one clear error."""
import gzip
import json
import lzma
import os
import struct

import pytest

from conftest import one_error_line

DATA = os.environ.get("ATTN_TEST_DATA") or os.path.join(os.path.dirname(__file__), "..", "data")
NEGATION = os.path.join(DATA, "negation_train.tsv")

SENTENCES = ["the cat sat on the mat .", "the dog ran past the road .", "a bird flew over the river .",
             "the river bank was muddy after the rain .", "she paid the money into the bank ."]


def corpus_text(lines=400):
    return "".join(SENTENCES[i % len(SENTENCES)] + ("\n" if i % 7 else "\n\n") for i in range(lines))


def tensors(path):
    """A safetensors file's tensors (name → bytes) and its metadata, less the training record
    (which names the data file)."""
    b = path.read_bytes()
    n = struct.unpack("<Q", b[:8])[0]
    head = json.loads(b[8:8 + n])
    meta = head.pop("__metadata__", {})
    meta.pop("training", None)
    data = b[8 + n:]
    return meta, {k: data[v["data_offsets"][0]:v["data_offsets"][1]] for k, v in head.items()}


def write_all_ways(tmp_path, name, text):
    plain = tmp_path / name
    plain.write_text(text)
    xz = tmp_path / (name + ".xz")
    xz.write_bytes(lzma.compress(text.encode()))
    gz = tmp_path / (name + ".gz")
    # Two concatenated members, as `cat a.gz b.gz` makes.
    half = len(text) // 2
    gz.write_bytes(gzip.compress(text[:half].encode()) + gzip.compress(text[half:].encode()))
    return plain, xz, gz


@pytest.mark.parametrize("task", ["masked-word", "classify"])
def test_compressed_data_trains_the_model_the_plain_file_trains(tmp_path, attn, task):
    text = corpus_text() if task == "masked-word" else open(NEGATION).read()
    models = []
    for source in write_all_ways(tmp_path, "data.txt", text):
        model = tmp_path / (source.name + ".safetensors")
        args = ["train", "--task", task, "--data", source, "--epochs", "1", "-o", model]
        if task == "masked-word":
            args += ["--layers", "1"]
        r = attn(*args)
        assert r.code == 0, r.err
        models.append(tensors(model))
    assert models[0] == models[1] == models[2]


def test_a_resumed_run_on_an_xz_corpus_writes_the_uninterrupted_file(tmp_path, attn):
    _, xz, _ = write_all_ways(tmp_path, "data.txt", corpus_text(3000))
    args = ["train", "--task", "masked-word", "--data", xz, "--layers", "1", "--epochs", "2",
            "--batch", "16", "--seed", "3"]
    whole = tmp_path / "whole.safetensors"
    assert attn(*args, "-o", whole).code == 0
    part = tmp_path / "part.safetensors"
    r = attn(*args, "-o", part, "--stop-after-steps", "29")
    assert r.code == 0 and not part.exists(), r.err
    r = attn(*args, "-o", part, "--resume")
    assert r.code == 0, r.err
    assert tensors(part) == tensors(whole)


@pytest.mark.parametrize("kind", ["xz", "gz"])
def test_damaged_or_truncated_compressed_data_is_one_error(tmp_path, attn, kind):
    text = corpus_text(2000).encode()
    packed = lzma.compress(text) if kind == "xz" else gzip.compress(text)
    # Cut in the middle, or a header byte changed (xz: the stream flags, which its CRC guards;
    # gzip: the compression method), so that no garbage is decoded before the error.
    at = 7 if kind == "xz" else 2
    for name, damaged in [("cut", packed[:len(packed) // 2]),
                          ("flipped", packed[:at] + bytes([packed[at] ^ 0x5A]) + packed[at + 1:])]:
        f = tmp_path / f"{name}.{kind}"
        f.write_bytes(damaged)
        r = attn("train", "--task", "masked-word", "--data", f, "--epochs", "1",
                 "-o", tmp_path / "m.safetensors")
        assert r.code == 2, r.err
        line = one_error_line(r)
        assert str(f) in line and "damaged or truncated" in line and "compressed byte" in line
        assert not (tmp_path / "m.safetensors").exists()
