"""attn embed's output formats (csv, the format taken from -o's extension) and --batch: one
record per input line, streamed, written atomically, with the errors of the CLI contract."""
import csv
import io
import json

import numpy as np
import pytest

from conftest import one_error_line

SENTENCES = ["the river bank", "", "money zzqxv bank", "zzqxv", 'rivers, "banks" flow']


@pytest.fixture
def batch_file(tmp_path):
    path = tmp_path / "sentences.txt"
    path.write_text("\n".join(SENTENCES) + "\n")
    return path


def single_json(attn, text):
    r = attn("embed", "--format", "json", text)
    assert r.code == 0, r.err
    return json.loads(r.out)


def test_csv_single_text_matches_json(attn):
    r = attn("embed", "--format", "csv", "money, bank")
    assert r.code == 0, r.err
    rows = list(csv.reader(io.StringIO(r.out)))
    assert rows[0] == ["token"] + [f"d{j}" for j in range(100)]
    assert [row[0] for row in rows[1:]] == ["money", ",", "bank"]  # "," quoted, read back
    values = np.array([[float(x) for x in row[1:]] for row in rows[1:]], np.float32)
    # The shortest decimal that reads back as the same float32: exact.
    j = single_json(attn, "money, bank")
    np.testing.assert_array_equal(values, np.array(j["embeddings"], np.float32))


@pytest.mark.parametrize("name,check", [
    ("c.json", lambda p: json.loads(p.read_text())["tokens"] == ["money", "bank"]),
    ("c.csv", lambda p: p.read_text().startswith("token,d0,")),
    ("c.npy", lambda p: np.load(p).shape == (2, 100)),
    ("c.txt", lambda p: p.read_text().startswith("money ")),
    ("c.vec", lambda p: p.read_text().startswith("money ")),
])
def test_format_from_the_output_extension(attn, tmp_path, name, check):
    r = attn("embed", "-o", tmp_path / name, "money bank")
    assert r.code == 0, r.err
    assert check(tmp_path / name)


def test_explicit_format_wins_over_the_extension(attn, tmp_path):
    r = attn("embed", "--format", "text", "-o", tmp_path / "c.json", "money bank")
    assert r.code == 0, r.err
    assert (tmp_path / "c.json").read_text().startswith("money ")


def test_batch_json_lines_one_record_per_line(attn, batch_file):
    r = attn("embed", "--batch", batch_file, "--format", "json")
    assert r.code == 0, r.err
    records = [json.loads(line) for line in r.out.splitlines()]
    assert [rec["line"] for rec in records] == [1, 2, 3, 4, 5]
    assert [rec["text"] for rec in records] == SENTENCES
    for rec, text in zip(records, SENTENCES):
        if rec["tokens"]:
            single = single_json(attn, text)
            for key in ("tokens", "embeddings", "attention", "unknown", "scale", "vectors"):
                assert rec[key] == single[key], (text, key)
    assert records[1]["tokens"] == [] and records[1]["embeddings"] == []
    assert records[3]["tokens"] == [] and records[3]["unknown"] == ["zzqxv"]
    assert "line 3" in r.err and "line 4" in r.err and "zzqxv" in r.err


def test_batch_csv_has_a_line_column(attn, batch_file):
    r = attn("embed", "--batch", batch_file, "--format", "csv")
    assert r.code == 0, r.err
    rows = list(csv.reader(io.StringIO(r.out)))
    assert rows[0][:3] == ["line", "token", "d0"] and len(rows[0]) == 102
    assert [(row[0], row[1]) for row in rows[1:]] == [
        ("1", "the"), ("1", "river"), ("1", "bank"), ("3", "money"), ("3", "bank"),
        ("5", "rivers"), ("5", ","), ("5", '"'), ("5", "banks"), ("5", '"'), ("5", "flow")]


def test_batch_text_records_end_with_a_blank_line(attn, batch_file):
    r = attn("embed", "--batch", batch_file)
    assert r.code == 0, r.err
    records, current = [], []
    for line in r.out.split("\n")[:-1]:
        if line:
            current.append(line.split(" ")[0])
        else:
            records.append(current)
            current = []
    assert current == []
    assert records == [["the", "river", "bank"], [], ["money", "bank"], [],
                       ["rivers", ",", '"', "banks", '"', "flow"]]


def test_batch_from_stdin_and_crlf(attn):
    r = attn("embed", "--batch", "-", "--format", "json", stdin="river bank\r\nmoney\r\n")
    assert r.code == 0, r.err
    records = [json.loads(line) for line in r.out.splitlines()]
    assert [rec["text"] for rec in records] == ["river bank", "money"]
    assert records[0] == {**single_json(attn, "river bank"), "line": 1, "text": "river bank"}


def test_batch_to_a_file_by_extension(attn, batch_file, tmp_path):
    out = tmp_path / "out.jsonl"
    r = attn("embed", "--batch", batch_file, "-o", out)
    assert r.code == 0, r.err
    assert r.out == "" and len(out.read_text().splitlines()) == len(SENTENCES)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.jsonl", "sentences.txt"]


def test_batch_strict_fails_with_the_line_and_writes_nothing(attn, batch_file, tmp_path):
    out = tmp_path / "out.jsonl"
    out.write_text("precious")
    r = attn("embed", "--batch", batch_file, "--strict", "-o", out)
    assert r.code == 2
    # The records stream, so the earlier lines' warnings (line 2 is blank) come first; the error
    # is the one line that ends the run.
    errors = [l for l in r.err.splitlines() if l.startswith("error: ")]
    assert len(errors) == 1 and r.err.splitlines()[-1] == errors[0], r.err
    line = errors[0]
    assert str(batch_file) in line and "zzqxv" in line and line.endswith("line 3")
    assert out.read_text() == "precious"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.jsonl", "sentences.txt"]


def test_batch_errors(attn, batch_file, tmp_path):
    missing = tmp_path / "missing.txt"
    r = attn("embed", "--batch", missing)
    assert r.code == 2 and one_error_line(r).startswith(f"error: {missing}: ")
    r = attn("embed", "--batch", batch_file, "--format", "npy", "-o", tmp_path / "x.npy")
    assert r.code == 1 and "npy" in one_error_line(r)
    r = attn("embed", "--batch", batch_file, "some text")
    assert r.code == 1 and "TEXT" in one_error_line(r)


def test_no_progress_bar_when_stderr_is_not_a_terminal(attn, batch_file):
    r = attn("embed", "--batch", batch_file, "--format", "json")
    assert "\r" not in r.err and "#" not in r.err and "%" not in r.err
