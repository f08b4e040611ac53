"""Issue #27: attn tried as a hostile user would. Each test replays one class of the review's
cases (a crash, a lost or clobbered file, a hang, a silently wrong answer) and fails without
its fix."""
import json
import os
import signal
import struct
import subprocess
import time

import numpy as np
import pytest

from conftest import ATTN, one_error_line

DATA = os.environ.get("ATTN_TEST_DATA") or os.path.join(os.path.dirname(__file__), "..", "data")
NEGATION = os.path.join(DATA, "negation_train.tsv")


# ---- 1. a checkpoint's numbers are range-checked against the run it resumes ----

MAGIC = len(b"attn-checkpoint/1\n")


def edit_checkpoint(path, edit):
    """Rewrites the checkpoint's JSON header through edit(header) (the arrays stay as they were)."""
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[MAGIC:MAGIC + 8])[0]
    head = json.loads(b[MAGIC + 8:MAGIC + 8 + n])
    edit(head)
    text = json.dumps(head).encode()
    open(path, "wb").write(b[:MAGIC] + struct.pack("<Q", len(text)) + text + b[MAGIC + 8 + n:])


@pytest.fixture
def stopped_run(tmp_path, attn):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the cat sat on the mat . the dog ran past the road .\n" * 420)
    args = ["train", "--task", "masked-word", "--data", corpus, "--layers", "1", "--epochs", "3",
            "-o", tmp_path / "m.safetensors"]
    r = attn(*args, "--stop-after-steps", "3")
    assert r.code == 0, r.err
    return args, tmp_path / "m.safetensors.checkpoint"


@pytest.mark.parametrize("field, value", [
    ("best_epoch", 10**12), ("best_epoch", -1), ("epoch", 10**12), ("epoch", 0), ("batch", 10**9),
    ("chunk", 10**6), ("skip", 10**12), ("sequence", -5), ("offset", 10**15), ("done", 10**9),
    ("loss_sum", -1.0), ("best_accuracy", 7.0), ("best_epoch", 1.5), ("epoch", "2"),
    ("best_saved", 1), ("best_loss", None),
])
def test_resume_refuses_a_checkpoint_field_out_of_range(stopped_run, attn, field, value):
    args, checkpoint = stopped_run
    edit_checkpoint(checkpoint, lambda h: h["header"]["progress"].update({field: value}))
    r = attn(*args, "--resume")
    assert r.code == 2, r.err
    line = one_error_line(r)
    assert line.startswith(f"error: {checkpoint}: checkpoint field 'progress.{field}'"), line
    assert not (checkpoint.parent / "m.safetensors").exists()
    assert checkpoint.exists()


def test_resume_refuses_a_missing_field_and_a_non_finite_weight(stopped_run, attn):
    args, checkpoint = stopped_run
    original = checkpoint.read_bytes()
    edit_checkpoint(checkpoint, lambda h: h["header"]["progress"].pop("chunk"))
    assert "no field 'progress.chunk'" in one_error_line(attn(*args, "--resume"))
    # NaN in the first float array (the header is unchanged, so the arrays' offsets hold).
    checkpoint.write_bytes(original)
    n = struct.unpack("<Q", original[MAGIC:MAGIC + 8])[0]
    head = json.loads(original[MAGIC + 8:MAGIC + 8 + n])
    name, entry = next((k, a) for k, a in head["arrays"].items()
                       if a["type"] == "f32" and a["bytes"] >= 4 and k.startswith("value."))
    at = MAGIC + 8 + n + entry["offset"]
    checkpoint.write_bytes(original[:at] + struct.pack("<f", float("nan")) + original[at + 4:])
    r = attn(*args, "--resume")
    assert r.code == 2
    assert f"checkpoint array '{name}' holds a non-finite value, element 0" in one_error_line(r)


def test_a_malformed_checkpoint_header_is_named_without_json_jargon(stopped_run, attn):
    args, checkpoint = stopped_run
    edit_checkpoint(checkpoint, lambda h: h["arrays"][next(iter(h["arrays"]))].update(offset="x"))
    r = attn(*args, "--resume")
    line = one_error_line(r)
    assert r.code == 2 and "json.exception" not in line and "needs a non-negative integer 'offset'" in line


# ---- 2. the checkpoint path is neither an input nor another output; only attn's own is removed ----

def test_checkpoint_naming_the_data_or_the_model_is_refused_before_training(tmp_path, attn):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the cat sat on the mat .\n" * 50)
    before = corpus.read_bytes()
    for checkpoint, other in [(corpus, "--data"), (tmp_path / "m.safetensors", "--output")]:
        r = attn("train", "--task", "masked-word", "--data", corpus, "--epochs", "1",
                 "-o", tmp_path / "m.safetensors", "--checkpoint", checkpoint)
        assert r.code == 1, r.err
        assert other in one_error_line(r)
    assert corpus.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corpus.txt"]


def test_a_finished_run_removes_only_a_checkpoint_it_wrote(tmp_path, attn):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the cat sat on the mat .\n" * 50)
    # A file that is not a checkpoint is never overwritten or removed.
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes")
    r = attn("train", "--task", "masked-word", "--data", corpus, "--epochs", "1", "--layers", "1",
             "-o", tmp_path / "m.safetensors", "--checkpoint", notes)
    assert r.code == 2 and "not an attn checkpoint" in one_error_line(r)
    assert notes.read_text() == "my notes"
    # A run that never saved its checkpoint leaves an older one alone...
    args = ["train", "--task", "masked-word", "--data", corpus, "--epochs", "2", "--layers", "1",
            "-o", tmp_path / "m.safetensors"]
    assert attn(*args, "--stop-after-steps", "1").code == 0
    old = tmp_path / "m.safetensors.checkpoint"
    kept = old.read_bytes()
    r = attn(*args, "--checkpoint-steps", "0")
    assert r.code == 0, r.err
    assert old.read_bytes() == kept
    # ... and the run that resumes from it removes it at the end.
    r = attn(*args, "--resume")
    assert r.code == 0, r.err
    assert not old.exists()


# ---- 4. outputs are distinct from each other and from every input ----

@pytest.fixture
def qkv(tmp_path):
    q = tmp_path / "q.npy"
    np.save(q, np.random.default_rng(0).standard_normal((1, 2, 5, 4)).astype(np.float32))
    return q


@pytest.mark.parametrize("extra, message", [
    (["-o", "o.npy", "--attn-weights-out", "o.npy"], "named by both --output and --attn-weights-out"),
    (["-o", "o.npy", "--grad-output", "q.npy", "--dq", "x.npy", "--dk", "x.npy", "--dv", "v.npy"],
     "named by both --dq and --dk"),
    (["-o", "q.npy"], "--output would overwrite --query"),
    (["-o", "./sub/../q.npy"], "--output would overwrite --query"),
    (["-o", "link.npy"], "--output would overwrite --query"),
])
def test_outputs_clobbering_each_other_or_an_input_are_refused(tmp_path, attn, qkv, extra, message):
    os.mkdir(tmp_path / "sub")
    os.symlink("q.npy", tmp_path / "link.npy")
    existing = tmp_path / "o.npy"
    existing.write_bytes(b"keep me")
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        r = attn("sdpa", "--query", "q.npy", "--key", "q.npy", "--value", "q.npy", *extra)
    finally:
        os.chdir(cwd)
    assert r.code == 1, r.err
    assert message in one_error_line(r)
    after = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    assert after == before


def test_mha_and_embed_outputs_are_checked_the_same_way(tmp_path, attn):
    r = attn("embed", "-o", tmp_path / "a.txt", "--batch", tmp_path / "a.txt")
    assert r.code == 1 and "would overwrite --batch" in one_error_line(r)
    w = tmp_path / "w.npy"
    r = attn("mha", "--weights", w, "--heads", "1", "--query", w, "-o", tmp_path / "x.npy",
             "--attn-weights-out", tmp_path / "x.npy")
    assert r.code == 1 and "named by both" in one_error_line(r)


# ---- 5. devices, FIFOs and symbolic links are written through, never replaced ----

def test_output_to_a_device_a_fifo_or_a_symlink_keeps_the_entry(tmp_path, attn, qkv):
    args = ["sdpa", "--query", qkv, "--key", qkv, "--value", qkv]
    assert attn(*args, "-o", "/dev/null").code == 0
    assert os.path.exists("/dev/null") and not os.path.isfile("/dev/null")
    # A symbolic link: its target gets the array, the link stays a link.
    link = tmp_path / "link.npy"
    os.symlink("real.npy", link)
    assert attn(*args, "-o", link).code == 0
    assert os.path.islink(link) and np.load(tmp_path / "real.npy").shape == (1, 2, 5, 4)
    # A FIFO: what reads it gets the array.
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = subprocess.Popen(["cat", str(fifo)], stdout=subprocess.PIPE)
    r = attn(*args, "-o", fifo)
    data = reader.communicate(timeout=30)[0]
    assert r.code == 0, r.err
    assert data.startswith(b"\x93NUMPY") and os.path.exists(fifo) and not os.path.isfile(fifo)
    # A directory is refused, whole.
    r = attn(*args, "-o", tmp_path)
    assert r.code == 2 and "is a directory" in one_error_line(r)


# ---- 6. an interrupted command removes its temporaries, exit 130 ----

def test_ctrl_c_during_embed_batch_leaves_no_temporary(tmp_path):
    sentences = tmp_path / "in.txt"
    sentences.write_text("the river bank is muddy and the money is in the bank\n" * 200000)
    out = tmp_path / "out.jsonl"
    proc = subprocess.Popen([ATTN, "embed", "--batch", sentences, "-o", out],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 60
    while time.time() < deadline:  # until the temporary has records in it
        temps = [p for p in tmp_path.iterdir() if p.name.startswith("out.jsonl.tmp-")]
        if temps and temps[0].stat().st_size > 0:
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.txt"]
