"""Issue #52, items 2 and 10: a model file is untrusted input. Every field of its config is held to
the range the model needs before anything is built from it (a language model with no context
divided by zero in `eval` and read past its table in `predict`), and its weights must be finite
(NaN weights predicted `nan` with exit 0). Each case is one error line and exit 2, never a crash."""
import json
import os
import random
import resource
import struct
import subprocess

import numpy as np
import pytest

from conftest import ATTN, Result, one_error_line

FIELDS = ["task", "embeddings", "embeddings_trained", "embed_dim", "new_words", "dim", "heads", "layers",
          "feedforward", "norm_first", "pool", "hidden", "max_positions", "window", "dropout",
          "adaptive_cutoffs"]
# 0, a negative, a size no model has, a wrong type.
VALUES = [0, -1, 10**12, "x"]


# AddressSanitizer reserves terabytes of address space for its shadow at start, so a sanitizer
# build cannot run under an address-space limit; there its own allocator refuses a request past
# its maximum (and the test, wanting exit 2 and the field's name, fails on any such attempt).
SANITIZED = "sanitize" in os.environ.get("ATTN_CXX_FLAGS", "")


def run_limited(*args):
    """attn under a 4 GB address-space limit: a config that asks for a huge network must be
    refused, not allocated (nor take the machine's memory with it)."""
    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
    proc = subprocess.run([ATTN, *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          timeout=120, preexec_fn=None if SANITIZED else limit)
    return Result(proc)


def read_model(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    return json.loads(b[8:8 + n]), b[8 + n:]


def write_model(path, head, data):
    text = json.dumps(head).encode()
    text += b" " * (-len(text) % 8)
    open(path, "wb").write(struct.pack("<Q", len(text)) + text + data)


def with_config(src, dst, **changes):
    head, data = read_model(src)
    config = json.loads(head["__metadata__"]["config"])
    config.update(changes)
    head["__metadata__"]["config"] = json.dumps(config)
    write_model(dst, head, data)
    return dst


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    r = random.Random(0)
    words = "the cat dog sat ran on under mat road river bank and then a old small".split()
    path = tmp_path_factory.mktemp("corpus") / "corpus.txt"
    path.write_text("".join(" ".join(r.choice(words) for _ in range(12)) + " .\n" for _ in range(200)))
    return path


@pytest.fixture(scope="module")
def lm_model(corpus, tmp_path_factory):
    out = tmp_path_factory.mktemp("lm") / "lm.safetensors"
    r = run_limited("train", "--task", "lm", "--data", corpus, "-o", out, "--layers", "1", "--context", "8",
                    "--batch", "8", "--epochs", "1", "--min-count", "1", "--threads", "1")
    assert r.code == 0, r.err
    return out


def test_a_language_model_with_no_context_is_refused_by_every_command(lm_model, corpus, tmp_path):
    bad = with_config(lm_model, tmp_path / "m.safetensors", max_positions=0)
    for args in (["eval", "--model", bad, "--data", corpus], ["predict", "--model", bad, "the cat"],
                 ["generate", "--model", bad, "--max-words", "3", "the cat"],
                 ["embed", "--model", bad, "the cat"]):
        r = run_limited(*args)
        assert r.code == 2, (args, r.code, r.err)
        assert "model config field 'max_positions' is 0, outside [1," in one_error_line(r), r.err


@pytest.mark.parametrize("value", VALUES, ids=["zero", "negative", "huge", "wrong-type"])
@pytest.mark.parametrize("field", FIELDS)
def test_every_config_field_is_range_checked_at_load(lm_model, tmp_path, field, value):
    bad = with_config(lm_model, tmp_path / "m.safetensors", **{field: value})
    r = run_limited("predict", "--model", bad, "the cat")
    assert r.code in (0, 2), (r.code, r.err)  # never a crash
    if r.code == 0:
        # Only a value the model may hold passes: zero where zero means "none".
        assert value == 0 and field in ("new_words", "window", "dropout"), r.out
        return
    line = one_error_line(r)
    assert line.startswith(f"error: {bad}: "), line
    if value != 0 or field == "max_positions":  # (layers=0 asks for the seeds' layer: a missing tensor)
        assert f"'{field}'" in line, line


def test_sizes_larger_than_the_files_tensors_are_refused_before_they_are_allocated(lm_model, tmp_path):
    # Within the per-field limit (2^20), but a 2^40-value attention no file of this size holds.
    big = 1 << 20
    bad = with_config(lm_model, tmp_path / "m.safetensors", embed_dim=big, dim=big, hidden=big, feedforward=big)
    r = run_limited("predict", "--model", bad, "the cat")
    assert r.code == 2, (r.code, r.err)
    assert "more than the file's" in one_error_line(r), r.err


def poisoned(src, dst, value, element=3):
    """src with one weight of its first matrix set to value."""
    head, data = read_model(src)
    name = next(k for k in sorted(head) if k != "__metadata__" and len(head[k]["shape"]) == 2)
    data = bytearray(data)
    at = head[name]["data_offsets"][0] + 4 * element
    data[at:at + 4] = np.float32(value).tobytes()
    write_model(dst, head, bytes(data))
    return dst, name


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_non_finite_weights_are_refused_naming_the_tensor_and_element(lm_model, corpus, tmp_path, value):
    bad, name = poisoned(lm_model, tmp_path / "m.safetensors", value)
    for args in (["predict", "--model", bad, "the cat"], ["eval", "--model", bad, "--data", corpus],
                 ["generate", "--model", bad, "--max-words", "3", "the cat"]):
        r = run_limited(*args)
        assert r.code == 2, (args, r.code, r.out, r.err)
        line = one_error_line(r)
        assert f"tensor '{name}' holds a non-finite value" in line and line.endswith("element 3"), line
        assert r.out == "", r.out
