"""attn-mpi train: data-parallel training over 2 and 3 ranks writes the model of the one-process
attn train --shards K bit for bit (classify and next-word, with dropout and learned rows), and
its errors as one line with no model file."""
import os

import pytest

from conftest import one_error_line
from test_ring_attention import ATTN, attn_mpi, pytestmark, run  # noqa: F401 (the skip)

POSITIVE = ["good", "great", "fine", "lovely", "superb", "nice", "happy", "bright"]
NEGATIVE = ["bad", "awful", "poor", "dull", "boring", "sad", "ugly", "weak"]
FILLER = ["the", "film", "was", "a", "story", "and", "quite", "with", "plot", "zzqxw", "qqzxv"]


def labelled_lines(n):
    """Sentences of varied length with a sentiment word (and words the vectors lack, which get
    learned rows); enough lines that 10% are held out for validation."""
    out = []
    for i in range(n):
        good = i % 3 != 0
        word = (POSITIVE if good else NEGATIVE)[(i * 5) % 8]
        words = [FILLER[(i * 7 + j * 3) % len(FILLER)] for j in range(1 + (i * 11) % 9)]
        words.insert((i * 13) % (len(words) + 1), word)
        out.append(("positive" if good else "negative") + "\t" + " ".join(words))
    return "\n".join(out) + "\n"


def train(tmp_path, name, ranks, *args):
    out = tmp_path / f"{name}.safetensors"
    if ranks == 0:
        r = run([ATTN, "train", *map(str, args), "-o", str(out)])
    else:
        r = attn_mpi(ranks, "train", *args, "-o", out)
    assert r.code == 0, r.err
    return out.read_bytes(), r


@pytest.mark.parametrize("ranks", [2, 3])
def test_classify_equals_one_process_with_as_many_shards(tmp_path, ranks):
    data = tmp_path / "train.tsv"
    data.write_text(labelled_lines(400))
    common = ["--task", "classify", "--data", data, "--epochs", "3", "--batch", "16"]
    one, _ = train(tmp_path, "one", 0, *common, "--shards", ranks)
    shared, r = train(tmp_path, "shared", ranks, *common)
    assert one == shared
    # rank 0 alone speaks: one summary line, not one per rank
    assert r.err.count("saved ") == 1
    # and the shards are what makes it differ from the plain batch gradient (a test that
    # could not fail otherwise)
    plain, _ = train(tmp_path, "plain", 0, *common)
    assert plain != one


def test_more_shards_than_ranks_and_next_word(tmp_path):
    data = tmp_path / "toy.txt"
    data.write_text("not like hate\ndo like like\nnot hate like\ndo hate hate\n" * 3)
    common = ["--task", "next-word", "--data", data, "--epochs", "20", "--batch", "5"]
    one, _ = train(tmp_path, "one", 0, *common, "--shards", 4)
    shared, _ = train(tmp_path, "shared", 2, *common, "--shards", 4)
    assert one == shared


def test_a_batch_smaller_than_the_shards(tmp_path):
    # 7 lines, batches of 2, 3 ranks: some shards of every batch are empty.
    data = tmp_path / "train.tsv"
    data.write_text(labelled_lines(7))
    common = ["--task", "classify", "--data", data, "--epochs", "2", "--batch", "2"]
    one, _ = train(tmp_path, "one", 0, *common, "--shards", 3)
    shared, _ = train(tmp_path, "shared", 3, *common)
    assert one == shared


def test_errors_are_one_line_and_no_model(tmp_path):
    data = tmp_path / "train.tsv"
    data.write_text(labelled_lines(50))
    missing = attn_mpi(2, "train", "--task", "classify", "--data", tmp_path / "absent.tsv",
                       "-o", tmp_path / "m.safetensors")
    assert missing.code == 2
    assert one_error_line(missing).startswith(f"error: {tmp_path / 'absent.tsv'}: cannot open")
    uneven = attn_mpi(2, "train", "--task", "classify", "--data", data, "--shards", 3,
                      "-o", tmp_path / "m.safetensors")
    assert uneven.code == 1
    assert "--shards 3 is not a multiple of the 2 ranks" in one_error_line(uneven)
    masked = attn_mpi(2, "train", "--task", "masked-word", "--data", data,
                      "-o", tmp_path / "m.safetensors")
    assert masked.code == 1
    assert "masked-word" in one_error_line(masked)
    assert not [p for p in os.listdir(tmp_path) if p.startswith("m.")]
