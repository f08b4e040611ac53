"""attn-mpi's ranks agree on the command before any work: ranks given other options, or other
copies of a file that each reads itself, stop with one error line, exit 2, nothing written and
no hang (issue #27, item 3). Each rank runs in a directory of its own (mpirun's MPMD form,
-wdir), as ranks on different machines would."""
import os
import signal
import subprocess

import numpy as np

from conftest import one_error_line
from test_ring_attention import ATTN, ATTN_MPI, MPI_ENV, MPIRUN, Result, run
from test_ring_attention import pytestmark  # noqa: F401 (the skip)
from test_train_shared import labelled_lines

DATA = os.path.join(os.environ.get("ATTN_TEST_DATA")
                    or os.path.join(os.path.dirname(__file__), "..", "data"), "negation_train.tsv")

# A run that agrees on nothing must still end at once; far below this.
HANG = 60


def mpmd(*ranks):
    """One rank per (directory, arguments) pair, each started in its directory. A run that
    outlives HANG seconds fails the test, and its whole process group is ended."""
    command = [MPIRUN, "--oversubscribe", "--quiet"]
    for i, (wdir, args) in enumerate(ranks):
        command += ([":"] if i else []) + ["-n", "1", "-wdir", str(wdir), ATTN_MPI, *map(str, args)]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=MPI_ENV, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=HANG)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise AssertionError(f"attn-mpi still running after {HANG} s: {command}")
    proc.stdout, proc.stderr = out, err
    return Result(proc)


def directories(tmp_path, n=2):
    dirs = [tmp_path / f"rank{r}" for r in range(n)]
    for d in dirs:
        d.mkdir()
    return dirs


def nothing_written(*dirs, prefix):
    return not [p for d in dirs for p in os.listdir(d) if p.startswith(prefix)]


TRAIN = ["train", "--task", "classify", "--data", "data.tsv", "--epochs", "2"]


def test_differing_data_files_stop_every_rank(tmp_path):
    a, b = directories(tmp_path)
    lines = open(DATA).read().splitlines(keepends=True)
    (a / "data.tsv").write_text("".join(lines))
    (b / "data.tsv").write_text("".join(lines[:800]))  # the issue's: a crash, exit 134
    r = mpmd((a, [*TRAIN, "-o", "m.safetensors"]), (b, [*TRAIN, "-o", "m.safetensors"]))
    assert r.code == 2, r.err
    line = one_error_line(r)
    assert line.startswith("error: data.tsv: differs between ranks (rank 1: "), line
    sizes = [os.path.getsize(d / "data.tsv") for d in (b, a)]
    assert f"rank 1: {sizes[0]} bytes, hash " in line and f"rank 0: {sizes[1]} bytes, hash " in line
    assert nothing_written(a, b, prefix="m.")


def test_a_file_missing_on_one_rank_names_that_rank(tmp_path):
    a, b = directories(tmp_path)
    (a / "data.tsv").write_text(labelled_lines(50))
    r = mpmd((a, [*TRAIN, "-o", "m.safetensors"]), (b, [*TRAIN, "-o", "m.safetensors"]))
    assert r.code == 2, r.err
    assert one_error_line(r).startswith(
        "error: data.tsv: differs between ranks (rank 1: cannot open: No such file or directory; "
        "rank 0: "), r.err
    assert nothing_written(a, b, prefix="m.")


def test_other_epochs_on_one_rank(tmp_path):
    a, b = directories(tmp_path)
    for d in (a, b):
        (d / "data.tsv").write_text(labelled_lines(50))
    common = ["train", "--task", "classify", "--data", "data.tsv", "--epochs"]
    r = mpmd((a, [*common, 3, "-o", "m.safetensors"]), (b, [*common, 1, "-o", "m.safetensors"]))
    assert r.code == 2, r.err  # the issue's: a hang
    assert one_error_line(r) == ("error: options differ between ranks: rank 1 was given "
                                 "'--epochs 1', rank 0 '--epochs 3'"), r.err
    assert nothing_written(a, b, prefix="m.")


def test_an_option_given_to_one_rank_only(tmp_path):
    a, b = directories(tmp_path)
    for d in (a, b):
        (d / "data.tsv").write_text(labelled_lines(50))
    r = mpmd((a, [*TRAIN, "-o", "m.safetensors"]),
             (b, [*TRAIN, "--heads", 2, "-o", "m.safetensors"]))
    assert r.code == 2, r.err  # the issue's: a model written, exit 0
    assert one_error_line(r) == ("error: options differ between ranks: rank 1 was given "
                                 "'--epochs 2 --heads 2', rank 0 '--epochs 2'"), r.err
    assert nothing_written(a, b, prefix="m.")


def test_the_lowest_differing_rank_is_reported(tmp_path):
    dirs = directories(tmp_path, 3)
    for d in dirs:
        (d / "data.tsv").write_text(labelled_lines(50))
    r = mpmd((dirs[0], [*TRAIN, "-o", "m.safetensors"]),
             (dirs[1], [*TRAIN, "--seed", 5, "-o", "m.safetensors"]),
             (dirs[2], [*TRAIN, "--seed", 6, "-o", "m.safetensors"]))
    assert r.code == 2, r.err
    assert "rank 1 was given '--epochs 2 --seed 5'" in one_error_line(r)
    assert nothing_written(*dirs, prefix="m.")


def write_qkv(d, L=16):
    rng = np.random.default_rng(3)
    for name in ("q", "k", "v"):
        np.save(d / f"{name}.npy", rng.standard_normal((1, 2, L, 8)).astype(np.float32))


SDPA = ["sdpa", "--query", "q.npy", "--key", "k.npy", "--value", "v.npy"]


def test_causal_on_one_rank_only(tmp_path):
    a, b = directories(tmp_path)
    for d in (a, b):
        write_qkv(d)
    r = mpmd((a, [*SDPA, "--causal", "-o", "out.npy"]), (b, [*SDPA, "-o", "out.npy"]))
    assert r.code == 2, r.err  # the issue's: no output, exit 0
    assert one_error_line(r) == ("error: options differ between ranks: rank 1 was given "
                                 "'--value v.npy', rank 0 '--value v.npy --causal'"), r.err
    assert nothing_written(a, b, prefix="out")


def test_sdpa_inputs_are_rank_0s_alone(tmp_path):
    # Rank 0 reads the arrays and sends each rank its rows: the others need no copy.
    a, b = directories(tmp_path)
    write_qkv(a)
    r = mpmd((a, [*SDPA, "-o", "out.npy"]), (b, [*SDPA, "-o", "out.npy"]))
    assert r.code == 0, r.err
    one = run([ATTN, "sdpa", "--query", str(a / "q.npy"), "--key", str(a / "k.npy"),
               "--value", str(a / "v.npy"), "-o", str(tmp_path / "one.npy")])
    assert one.code == 0, one.err
    assert np.allclose(np.load(a / "out.npy"), np.load(tmp_path / "one.npy"), atol=1e-6)
    assert nothing_written(b, prefix="out")


def test_a_shorter_batch_file_on_one_rank(tmp_path):
    a, b = directories(tmp_path)
    lines = [f"the bank of the river {i}" for i in range(500)]
    (a / "in.txt").write_text("\n".join(lines) + "\n")
    (b / "in.txt").write_text("\n".join(lines[:132]) + "\n")  # the issue's: 132 records of 500
    args = ["embed", "--batch", "in.txt", "--format", "json", "-o", "out.jsonl"]
    r = mpmd((a, args), (b, args))
    assert r.code == 2, r.err
    assert one_error_line(r).startswith("error: in.txt: differs between ranks (rank 1: "), r.err
    assert nothing_written(a, b, prefix="out")


def test_a_shared_command_on_one_rank_and_a_rank_0_one_on_the_other(tmp_path):
    # embed TEXT runs on rank 0 alone, embed --batch on every rank: without the agreement rank 1
    # would wait for a rank 0 that never comes.
    a, b = directories(tmp_path)
    (b / "in.txt").write_text("the bank\n")
    r = mpmd((a, ["embed", "the", "bank"]), (b, ["embed", "--batch", "in.txt"]))
    assert r.code == 2, r.err
    assert one_error_line(r) == ("error: options differ between ranks: rank 1 was given "
                                 "'--batch in.txt', rank 0 'the bank'"), r.err


def test_identical_copies_under_other_paths_agree(tmp_path):
    # The digest is compared, not the path: each rank names its own copy.
    a, b = directories(tmp_path)
    for d in (a, b):
        (d / "data.tsv").write_text(labelled_lines(200))
    common = ["train", "--task", "classify", "--epochs", "2", "--batch", "16"]
    r = mpmd((a, [*common, "--data", a / "data.tsv", "-o", "m.safetensors"]),
             (b, [*common, "--data=" + str(b / "data.tsv"), "-o", "m.safetensors"]))
    assert r.code == 0, r.err
    one = run([ATTN, *common, "--data", str(a / "data.tsv"), "--shards", "2",
               "-o", str(tmp_path / "one.safetensors")])
    assert one.code == 0, one.err
    assert (a / "m.safetensors").read_bytes() == (tmp_path / "one.safetensors").read_bytes()
    assert nothing_written(b, prefix="m.")
