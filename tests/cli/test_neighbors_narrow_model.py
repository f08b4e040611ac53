"""`attn neighbors --model M` on a masked-word model narrower than GloVe's 100 dimensions: the
model's reading is a row of its own word space, read at its own width. f70fdea read it at GloVe's
width, past the end of each row, and printed whatever lay there (different from run to run; the
sanitizers' build reports the read)."""
import os
import re
import subprocess

from conftest import ATTN

MODEL = os.path.join(os.path.dirname(__file__), "..", "data", "fixtures", "models", "mw_l1_full.safetensors")
TEXT = "the child frobbed the river bank. then the cat sat on the mat"


def neighbors(*extra):
    r = subprocess.run([ATTN, "neighbors", "--model", MODEL, "--word", "river", "--top", "4", *extra, TEXT],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r.stdout


def model_cosines(out):
    # The movement table's rows: a word, then its cosines (static, attention, model) and the change.
    rows = [line.split() for line in out.splitlines() if re.fullmatch(r"\s+\S+(\s+[-+]?\d\.\d+){4}\s*", line)]
    assert rows, out
    return [float(r[-2]) for r in rows]


def test_the_reading_is_read_at_the_models_width():
    first = neighbors()
    for _ in range(3):
        assert neighbors() == first
    assert all(-1.0 <= c <= 1.0 for c in model_cosines(first))


def test_hidden_reading_too():
    first = neighbors("--hide-token")
    assert neighbors("--hide-token") == first
    assert all(-1.0 <= c <= 1.0 for c in model_cosines(first))
