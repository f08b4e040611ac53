"""classify and next-word on the one training loop (issue #53): a run stopped with
--stop-after-steps and resumed with --resume writes the uninterrupted run's file byte for byte
(mid-epoch, at an epoch's end, with dropout, held-out lines and --eval-steps); --time ends a run
on its budget; a checkpoint of one task is not resumed by another."""
import os

import pytest

from conftest import one_error_line, run_attn

DATA = os.environ.get("ATTN_TEST_DATA") or os.path.join(os.path.dirname(__file__), "..", "data")
LABELLED = os.path.join(DATA, "negation_train.tsv")
HELDOUT = os.path.join(DATA, "negation_heldout.tsv")

# 864 training lines once 96 are held out: 54 steps an epoch at batch 16.
CLASSIFY = ["--task", "classify", "--data", LABELLED, "--epochs", "3", "--batch", "16", "--seed", "4",
            "--threads", "1"]
NEXT_WORD = ["--task", "next-word", "--data", LABELLED, "--epochs", "2", "--batch", "32", "--seed", "4",
             "--threads", "1"]


def stopped_and_resumed(tmp_path, args, stop):
    full, part = tmp_path / "full.safetensors", tmp_path / "part.safetensors"
    r = run_attn("train", *args, "-o", full)
    assert r.code == 0, r.err
    r = run_attn("train", *args, "-o", part, "--stop-after-steps", stop)
    assert r.code == 0 and not part.exists(), r.err
    assert f"stopped after {stop} steps" in r.err
    assert os.path.exists(str(part) + ".checkpoint")
    r = run_attn("train", *args, "-o", part, "--resume")
    assert r.code == 0, r.err
    assert f"resumed from {part}.checkpoint at step {stop}" in r.err
    assert not os.path.exists(str(part) + ".checkpoint")  # the run is complete: nothing to resume
    return full.read_bytes(), part.read_bytes()


@pytest.mark.parametrize("stop", [20, 54, 100])
def test_classify_resumed_writes_the_uninterrupted_file(tmp_path, stop):
    full, resumed = stopped_and_resumed(tmp_path, [*CLASSIFY, "--dropout", "0.1"], stop)
    assert full == resumed


def test_classify_with_a_validation_file_and_eval_steps_resumes_exactly(tmp_path):
    args = [*CLASSIFY, "--valid", HELDOUT, "--eval-steps", "25"]
    full, resumed = stopped_and_resumed(tmp_path, args, 70)
    assert full == resumed
    # the curve holds the --eval-steps scores, the resumed run's as the uninterrupted run's
    assert b'"step":25' in full or b'\\"step\\":25' in full


@pytest.mark.parametrize("stop", [7, 40])
def test_next_word_resumed_writes_the_uninterrupted_file(tmp_path, stop):
    full, resumed = stopped_and_resumed(tmp_path, NEXT_WORD, stop)
    assert full == resumed


def test_classify_takes_a_time_budget(tmp_path):
    out = tmp_path / "timed.safetensors"
    r = run_attn("train", "--task", "classify", "--data", LABELLED, "--time", "2s", "--patience", "100000",
                 "--threads", "1", "-o", out)
    assert r.code == 0, r.err
    assert "(the --time budget)" in r.err and out.exists()


def test_a_checkpoint_resumes_its_own_task_only(tmp_path):
    part = tmp_path / "part.safetensors"
    assert run_attn("train", *CLASSIFY, "-o", part, "--stop-after-steps", "5").code == 0
    r = run_attn("train", *NEXT_WORD, "-o", part, "--resume")
    assert r.code == 2
    assert "not a next-word training checkpoint" in one_error_line(r)
    assert not part.exists()


def test_max_tokens_stays_for_the_streamed_tasks(tmp_path):
    r = run_attn("train", *CLASSIFY, "--max-tokens", "1000", "-o", tmp_path / "m.safetensors")
    assert r.code == 1
    assert "--max-tokens is for --task masked-word and lm" in one_error_line(r)
