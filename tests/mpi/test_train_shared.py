"""attn-mpi train: data-parallel training over 2 and 3 ranks writes the model of the one-process
attn train --shards K bit for bit (classify, next-word, the language model and masked-word, with
dropout and learned rows; a stopped language model resumes to the same file), and its errors as
one line with no model file."""
import os
import struct

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
    assert tensor_bytes(plain) != tensor_bytes(one)


def tensor_bytes(b):
    """A safetensors file's tensors, without its header (the training record says the shards)."""
    return b[8 + struct.unpack("<Q", b[:8])[0]:]


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
    assert not [p for p in os.listdir(tmp_path) if p.startswith("m.")]


def paragraphs(n):
    """Plain text, one paragraph a line, for the corpus trainer's tasks (lm, masked-word)."""
    words = POSITIVE + NEGATIVE + FILLER
    return "".join(" ".join(words[(i * 7 + j * 5) % len(words)] for j in range(3 + (i * 11) % 13)) + " .\n"
                   for i in range(n))


LM = ["--task", "lm", "--layers", "1", "--context", "16", "--batch", "6", "--epochs", "2", "--threads", "1"]


def test_the_language_model_equals_one_process_with_as_many_shards(tmp_path):
    # 240 paragraphs: some held out, windows of 16 in batches of 6 (the last batch short), dropout on.
    data = tmp_path / "text.txt"
    data.write_text(paragraphs(240))
    one, _ = train(tmp_path, "one", 0, *LM, "--data", data, "--shards", 2)
    shared, r = train(tmp_path, "shared", 2, *LM, "--data", data)
    assert one == shared
    assert r.err.count("saved ") == 1 and r.err.count("kept epoch") == 1  # rank 0 alone speaks
    plain, _ = train(tmp_path, "plain", 0, *LM, "--data", data)
    assert tensor_bytes(plain) != tensor_bytes(one)


def test_a_stopped_shared_language_model_resumes_to_the_same_file(tmp_path):
    # Rank 0 alone writes the checkpoint; every rank resumes from it.
    data = tmp_path / "text.txt"
    data.write_text(paragraphs(240))
    one, _ = train(tmp_path, "one", 0, *LM, "--data", data, "--shards", 2)
    out = tmp_path / "resumed.safetensors"
    stopped = attn_mpi(2, "train", *LM, "--data", data, "--stop-after-steps", 5, "-o", out)
    assert stopped.code == 0, stopped.err
    assert stopped.err.count("the training state is in") == 1 and not out.exists()
    resumed = attn_mpi(2, "train", *LM, "--data", data, "--resume", "-o", out)
    assert resumed.code == 0, resumed.err
    assert out.read_bytes() == one
    assert not os.path.exists(str(out) + ".checkpoint")


def test_the_masked_word_model_equals_one_process_with_as_many_shards(tmp_path):
    data = tmp_path / "text.txt"
    data.write_text(paragraphs(240))
    common = ["--task", "masked-word", "--data", data, "--layers", "1", "--epochs", "1", "--batch", "8",
              "--threads", "1"]
    one, _ = train(tmp_path, "one", 0, *common, "--shards", 2)
    shared, _ = train(tmp_path, "shared", 2, *common)
    assert one == shared


PAIRS = os.path.join(os.path.dirname(__file__), "..", "data", "toy_pairs.tsv")


@pytest.mark.parametrize("ranks", [2, 3])
def test_translate_equals_one_process_with_as_many_shards(tmp_path, ranks):
    # A translator (issue #54), with dropout: each rank computes its shards of every batch.
    common = ["--task", "translate", "--data", PAIRS, "--layers", "1", "--dim", "32", "--heads", "2",
              "--feedforward", "64", "--pieces", "80", "--epochs", "2", "--batch-tokens", "300", "--seed", "5"]
    one, _ = train(tmp_path, "one", 0, *common, "--shards", ranks)
    shared, r = train(tmp_path, "shared", ranks, *common)
    assert one == shared
    assert r.err.count("saved ") == 1
    plain, _ = train(tmp_path, "plain", 0, *common)
    assert tensor_bytes(plain) != tensor_bytes(one)
