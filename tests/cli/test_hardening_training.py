"""Issue #52, training's part: a run that diverges, snapshots named like inputs, a damaged or
foreign checkpoint, two runs on one checkpoint, option values that parsed silently, SIGTERM, and a
log that shows a streamed run moving. Each test fails on the binary before the fixes."""
import json
import os
import random
import shutil
import signal
import struct
import subprocess
import time

import pytest

from conftest import ATTN, one_error_line

MAGIC = len(b"attn-checkpoint/2\n")
TEXT = "the cat sat on the mat . the dog ran past the road .\n"


def masked_args(corpus, out, *extra):
    return ["train", "--task", "masked-word", "--data", corpus, "--layers", "1", "--threads", "1", "-o", out,
            *(extra if "--epochs" in extra else ("--epochs", "3", *extra))]


def lm_args(corpus, out, *extra):
    return ["train", "--task", "lm", "--data", corpus, "--layers", "1", "--context", "16", "--batch", "8",
            "--threads", "1", "-o", out, *(extra if "--epochs" in extra else ("--epochs", "1", *extra))]


@pytest.fixture
def corpus(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text(TEXT * 420)
    return path


# ---- 9. a run that diverges stops with an error; the output in place stays ----

def huge_vectors(path):
    """Word vectors so large that the first forward pass overflows: every task's loss is NaN."""
    words = ["the", "cat", "sat", "on", "mat", "dog", "ran", "past", "road", ".", "good", "bad"]
    path.write_text("".join(f"{w} " + " ".join(["3e37"] * 8) + "\n" for w in words))
    return path


@pytest.mark.parametrize("task", ["classify", "next-word", "masked-word", "lm"])
def test_a_run_whose_loss_is_not_finite_fails_and_keeps_the_output(tmp_path, attn, task):
    data = tmp_path / "data.txt"
    if task == "classify":
        data.write_text("".join(f"{'good' if i % 2 else 'bad'}\tthe cat sat on the mat\n" for i in range(40)))
    else:
        data.write_text(TEXT * 40)
    out = tmp_path / "m.safetensors"
    out.write_bytes(b"the model of an earlier run")
    extra = ["--layers", "1", "--context", "8"] if task == "lm" else ["--layers", "1"]
    r = attn("train", "--task", task, "--data", data, "--vectors", huge_vectors(tmp_path / "v.txt"),
             "--epochs", "1", "--threads", "1", *extra, "-o", out)
    assert r.code == 2, r.err
    # (Epochs that ended before it keep their lines: the error is the last line, and the only one.)
    lines = [x for x in r.err.splitlines() if x.strip()]
    assert [x for x in lines if x.startswith("error: ")] == lines[-1:], r.err
    assert lines[-1].startswith(f"error: {data}: training diverged") and ", step " in lines[-1], r.err
    assert out.read_bytes() == b"the model of an earlier run"
    assert not os.path.exists(str(out) + ".checkpoint")


def test_a_learning_rate_past_1_is_a_usage_error(tmp_path, attn, corpus):
    out = tmp_path / "m.safetensors"
    r = attn("train", "--task", "classify", "--data", corpus, "--lr", "10", "-o", out)
    assert r.code == 1
    assert "--lr: must be at most 1, not 10" in one_error_line(r)
    assert not out.exists()
    assert "at most 1" in attn("train", "--help").out


# ---- 4. --save-steps' snapshots are outputs: never an input, by name or by link ----

def test_a_snapshot_name_that_is_an_input_is_refused(tmp_path, attn):
    out = tmp_path / "m.safetensors"
    data = tmp_path / "m.step2.safetensors"  # the name of the run's second-step snapshot
    data.write_text(TEXT * 420)
    before = data.read_bytes()
    r = attn(*masked_args(data, out, "--eval-steps", "2", "--save-steps", "2", "--stop-after-steps", "3"))
    assert r.code == 1, r.err
    assert "--save-steps would overwrite --data, an input" in one_error_line(r)
    assert data.read_bytes() == before
    assert not os.path.exists(str(out) + ".checkpoint")


def test_a_link_named_like_a_snapshot_to_an_input_is_refused(tmp_path, attn, corpus):
    out = tmp_path / "m.safetensors"
    (tmp_path / "m.step2.safetensors").symlink_to(corpus)
    before = corpus.read_bytes()
    r = attn(*masked_args(corpus, out, "--eval-steps", "2", "--save-steps", "2", "--stop-after-steps", "3"))
    assert r.code == 1, r.err
    assert "--save-steps would overwrite --data" in one_error_line(r)
    assert corpus.read_bytes() == before


def test_snapshots_that_are_no_input_are_still_written(tmp_path, attn, corpus):
    out = tmp_path / "m.safetensors"
    (tmp_path / "m.step2.safetensors").write_bytes(b"an earlier run's snapshot")
    r = attn(*masked_args(corpus, out, "--eval-steps", "2", "--save-steps", "2", "--stop-after-steps", "3"))
    assert r.code == 0, r.err
    assert (tmp_path / "m.step2.safetensors").read_bytes() != b"an earlier run's snapshot"


# ---- 8. a checkpoint's body is checked against the checksum in its header ----

@pytest.fixture
def stopped(tmp_path, attn, corpus):
    args = masked_args(corpus, tmp_path / "m.safetensors")
    r = attn(*args, "--stop-after-steps", "3")
    assert r.code == 0, r.err
    return args, tmp_path / "m.safetensors.checkpoint"


def test_a_flipped_byte_in_a_checkpoints_body_is_found(stopped, attn):
    args, checkpoint = stopped
    original = checkpoint.read_bytes()
    n = struct.unpack("<Q", original[MAGIC:MAGIC + 8])[0]
    body = MAGIC + 8 + n
    rng = random.Random(52)
    for _ in range(5):
        at = rng.randrange(body, len(original))
        damaged = bytearray(original)
        damaged[at] ^= 1 << rng.randrange(8)
        checkpoint.write_bytes(bytes(damaged))
        r = attn(*args, "--resume")
        assert r.code == 2, (at, r.err)
        line = one_error_line(r)
        assert line.startswith(f"error: {checkpoint}: damaged checkpoint"), line
        assert not (checkpoint.parent / "m.safetensors").exists()
    checkpoint.write_bytes(original + b"\0")  # a byte more is a damage too
    assert attn(*args, "--resume").code == 2
    checkpoint.write_bytes(original)
    r = attn(*args, "--resume")
    assert r.code == 0, r.err


def test_a_checkpoint_of_the_format_without_a_checksum_is_refused_plainly(stopped, attn):
    args, checkpoint = stopped
    b = checkpoint.read_bytes()
    checkpoint.write_bytes(b"attn-checkpoint/1\n" + b[MAGIC:])
    r = attn(*args, "--resume")
    assert r.code == 2
    assert "older attn (attn-checkpoint/1, without a checksum)" in one_error_line(r)
    # A new run (no --resume) may replace it: it is a checkpoint, not someone's file.
    r = attn(*args, "--stop-after-steps", "1")
    assert r.code == 0, r.err


# ---- 7. --resume matches the data by its bytes, not its name ----

def test_the_same_data_under_another_name_resumes(stopped, attn, tmp_path, corpus):
    args, checkpoint = stopped
    moved = tmp_path / "moved.txt"
    shutil.move(corpus, moved)
    args = [str(moved) if str(a) == str(corpus) else a for a in args]
    r = attn(*args, "--resume")
    assert r.code == 0, r.err
    assert "resumed from" in r.err


def test_other_data_under_the_same_name_is_refused(stopped, attn, corpus):
    args, checkpoint = stopped
    # The same words, lengths and size: only the bytes tell it apart.
    corpus.write_text(TEXT.replace("cat sat on the mat", "mat sat on the cat") * 420)
    r = attn(*args, "--resume")
    assert r.code == 2
    assert "made with other data or options" in one_error_line(r)
    assert checkpoint.exists()


# ---- 6. a run holds its checkpoint: a second run with the same -o is refused at its start ----

def test_a_second_run_on_the_same_checkpoint_is_refused(tmp_path, attn):
    data = tmp_path / "big.txt"
    data.write_text(TEXT * 2000)
    out = tmp_path / "m.safetensors"
    checkpoint = tmp_path / "m.safetensors.checkpoint"
    first = subprocess.Popen([ATTN, *map(str, masked_args(data, out, "--checkpoint-steps", "1"))],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 60
        while not checkpoint.exists() and first.poll() is None and time.time() < deadline:
            time.sleep(0.01)
        assert first.poll() is None, "the first run ended before the test could start the second"
        r = attn(*masked_args(data, out, "--stop-after-steps", "1", "--checkpoint-steps", "0"))
        assert r.code == 1, r.err
        line = one_error_line(r)
        assert line.startswith(f"error: {checkpoint}: another attn train is running"), line
        assert first.poll() is None and checkpoint.exists()
    finally:
        first.send_signal(signal.SIGINT)
        first.wait(60)
    assert first.returncode == 130
    assert checkpoint.exists() and not (tmp_path / "m.safetensors.checkpoint.lock").exists()
    # The lock is gone with its run: the same command resumes.
    r = attn(*masked_args(data, out, "--resume", "--stop-after-steps", "100000"))
    assert r.code == 0, r.err


def test_a_lock_file_left_by_a_killed_run_does_not_block(tmp_path, attn, corpus):
    out = tmp_path / "m.safetensors"
    (tmp_path / "m.safetensors.checkpoint.lock").write_text("")
    r = attn(*masked_args(corpus, out, "--epochs", "1"))
    assert r.code == 0, r.err
    assert out.exists() and not (tmp_path / "m.safetensors.checkpoint.lock").exists()


def test_a_file_of_the_lock_files_name_that_attn_did_not_make_is_kept(tmp_path, attn, corpus):
    # The run removes its lock file at its end: never somebody's file of that name.
    out = tmp_path / "m.safetensors"
    notes = tmp_path / "m.safetensors.checkpoint.lock"
    notes.write_text("my notes\n")
    r = attn(*masked_args(corpus, out, "--epochs", "1"))
    assert r.code == 1, r.err
    assert "is not a lock file attn made" in one_error_line(r)
    assert notes.read_text() == "my notes\n" and not out.exists()


# ---- 14. budgets and values that parsed silently; SIGTERM says what it did ----

def test_a_token_budget_near_2_to_the_63_trains_the_epochs_asked(tmp_path, attn, corpus):
    out = tmp_path / "m.safetensors"
    r = attn(*lm_args(corpus, out, "--max-tokens", str(2**63 - 1)))
    assert r.code == 0, r.err
    assert "epoch 1/1" in r.err
    assert "--max-tokens budget" not in r.err  # the epochs ended the run, not the tokens


@pytest.mark.parametrize("value", ["30", "1h30", "1s1s", "30s1m", "1m1h", "m", "1h 30m"])
def test_a_duration_needs_a_unit_on_every_number_in_order(tmp_path, attn, corpus, value):
    r = attn(*lm_args(corpus, tmp_path / "m.safetensors", "--time", value))
    assert r.code == 1
    assert f"--time '{value}': expected a duration" in one_error_line(r)


def test_durations_with_their_units_still_parse(tmp_path, attn, corpus):
    for value in ["1h30m", "0.5h", "2m30s", "90s"]:
        r = attn(*lm_args(corpus, tmp_path / "m.safetensors", "--time", value, "--stop-after-steps", "1"))
        assert r.code == 0, (value, r.err)


@pytest.mark.parametrize("value, field", [("100,,200", "field 2 is empty"), (",100", "field 1 is empty"),
                                          ("100,", "field 2 is empty"), ("100,x", "field 2 is 'x'"),
                                          ("0,5", "field 1 is '0'")])
def test_adaptive_softmax_cuts_refuse_empty_fields(tmp_path, attn, corpus, value, field):
    r = attn(*lm_args(corpus, tmp_path / "m.safetensors", f"--adaptive-softmax={value}"))
    assert r.code == 1
    assert f"--adaptive-softmax '{value}': {field}" in one_error_line(r)


def test_sigterm_stops_training_as_ctrl_c_does(tmp_path):
    data = tmp_path / "big.txt"
    data.write_text(TEXT * 2000)
    out = tmp_path / "m.safetensors"
    checkpoint = tmp_path / "m.safetensors.checkpoint"
    proc = subprocess.Popen([ATTN, *map(str, masked_args(data, out, "--checkpoint-steps", "1"))],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + 60
    while not checkpoint.exists() and proc.poll() is None and time.time() < deadline:
        time.sleep(0.01)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    assert "interrupted: the training state is in" in err.decode()
    assert checkpoint.exists() and not out.exists()


# ---- 19. a streamed run writes a line every few seconds when stderr is not a terminal ----

def test_a_language_model_shows_progress_in_a_log(tmp_path, attn, corpus):
    r = attn(*lm_args(corpus, tmp_path / "m.safetensors", "--epochs", "1000", "--time", "7s"))
    assert r.code == 0, r.err
    lines = [x for x in r.err.splitlines() if x.startswith("progress: epoch ") and "ETA" in x]
    assert lines and all("\r" not in x and "\x1b" not in x for x in lines), r.err
    assert "(the --time budget)" in r.err
