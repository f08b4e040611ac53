"""attn-mpi embed --batch: the lines shared among 2 and 3 ranks give attn embed --batch's output
byte for byte, with the vectors and with a model, and its errors as one line."""
import os

import pytest

from conftest import one_error_line
from test_ring_attention import ATTN, attn_mpi, pytestmark, run  # noqa: F401 (the skip)

WORDS = ["the", "bank", "of", "river", "money", "grows", "water", "he", "sat", "on", "watched",
         "paid", "into", "her", "account", "at", "and", ",", "."]


def corpus(lines):
    """Sentences of varied length, with blank lines, an unknown word and a CRLF line among them
    (several blocks of 32 lines per rank, the last one partial)."""
    out = []
    for i in range(lines):
        if i % 17 == 5:
            out.append("")
        elif i % 23 == 7:
            out.append("the zzqxv bank")
        else:
            n = 1 + (i * 7) % 12
            out.append(" ".join(WORDS[(i + j * 3) % len(WORDS)] for j in range(n)))
    text = "\n".join(out) + "\n"
    return text.replace("river bank", "river bank\r", 1)


@pytest.mark.parametrize("ranks", [1, 2, 3])
@pytest.mark.parametrize("lines", [5, 161])
@pytest.mark.parametrize("fmt", ["json", "csv", "text"])
def test_shared_batch_equals_one_process_byte_for_byte(tmp_path, ranks, lines, fmt):
    src = tmp_path / "in.txt"
    src.write_bytes(corpus(lines).encode())
    one = run([ATTN, "embed", "--batch", str(src), "--format", fmt, "-o", str(tmp_path / "one")])
    assert one.code == 0, one.err
    shared = attn_mpi(ranks, "embed", "--batch", src, "--format", fmt, "-o", tmp_path / "shared")
    assert shared.code == 0, shared.err
    a, b = (tmp_path / "one").read_bytes(), (tmp_path / "shared").read_bytes()
    assert a == b, f"{ranks} ranks, {lines} lines, {fmt}: first difference at byte " \
                   f"{next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))}"
    # The warnings too: rank 0 prints every rank's, in input order, with one process's limit
    # (161 lines have more than 10 to name, and the count of the rest).
    assert shared.err == one.err


@pytest.mark.parametrize("ranks", [2, 3])
def test_shared_batch_with_the_builtin_model(tmp_path, ranks):
    src = tmp_path / "in.txt"
    src.write_bytes(corpus(100).encode())
    one = run([ATTN, "embed", "--model", "builtin", "--batch", str(src), "--format", "json",
               "-o", str(tmp_path / "one.jsonl")])
    assert one.code == 0, one.err
    shared = attn_mpi(ranks, "embed", "--model", "builtin", "--batch", src, "--format", "json",
                      "-o", tmp_path / "shared.jsonl")
    assert shared.code == 0, shared.err
    assert (tmp_path / "one.jsonl").read_bytes() == (tmp_path / "shared.jsonl").read_bytes()


@pytest.mark.parametrize("ranks", [2, 3])
def test_strict_error_is_the_one_process_error_and_no_output(tmp_path, ranks):
    # The first unknown token is on line 8 (rank 0's block) for plain runs; put one later too,
    # in another rank's block, and check the first in input order is the one reported.
    text = corpus(161).replace("the zzqxv bank", "the river bank")
    lines = text.split("\n")
    lines[69] = "the qqzzx bank"  # line 70: block 2 (rank 2 of 3, rank 0 of 2)
    lines[40] = "the zzqxv bank"  # line 41: block 1 (rank 1)
    src = tmp_path / "in.txt"
    src.write_text("\n".join(lines))
    one = run([ATTN, "embed", "--strict", "--batch", str(src), "-o", str(tmp_path / "one.txt")])
    shared = attn_mpi(ranks, "embed", "--strict", "--batch", src, "-o", tmp_path / "shared.txt")
    assert one.code == shared.code == 2, shared.err
    # Blank lines before the unknown token are warned about first (records stream); the error is
    # the one line that ends the run.
    def error_line(r):
        errors = [l for l in r.err.splitlines() if l.startswith("error: ")]
        assert len(errors) == 1 and r.err.splitlines()[-1] == errors[0], r.err
        return errors[0]
    assert error_line(shared) == error_line(one)
    assert shared.err == one.err  # the warnings before it too, in input order
    assert "line 41" in error_line(shared)
    assert not [p for p in os.listdir(tmp_path) if p.startswith("shared")]


def test_missing_batch_file_is_one_error_on_every_rank(tmp_path):
    r = attn_mpi(3, "embed", "--batch", tmp_path / "absent.txt", "-o", tmp_path / "out.txt")
    assert r.code == 2, r.err
    assert one_error_line(r).startswith(f"error: {tmp_path / 'absent.txt'}: cannot open")
    assert not [p for p in os.listdir(tmp_path) if p.startswith("out")]
