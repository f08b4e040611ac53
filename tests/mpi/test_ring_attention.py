"""attn-mpi sdpa and bench: ring attention over 1, 2 and 3 ranks against the one-process attn
and a float64 reference, and the errors every rank must agree on."""
import json
import os
import shutil
import subprocess

import numpy as np
import pytest

from conftest import one_error_line

HERE = os.path.dirname(__file__)
ATTN = os.environ.get("ATTN_BIN") or os.path.join(HERE, "..", "..", "build", "bin", "attn")
ATTN_MPI = os.environ.get("ATTN_MPI_BIN") or os.path.join(HERE, "..", "..", "build", "bin", "attn-mpi")
MPIRUN = shutil.which("mpirun")

pytestmark = pytest.mark.skipif(
    MPIRUN is None or not os.path.exists(ATTN_MPI),
    reason="attn-mpi tests need mpirun and build/bin/attn-mpi (apt-get install libopenmpi-dev "
           "openmpi-bin, then make build)")

# One thread per rank (the machine may have fewer cores than ranks); root allowed, as in CI.
MPI_ENV = dict(os.environ, OMP_NUM_THREADS="1", OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMPI_MCA_rmaps_base_oversubscribe="1")


class Result:
    def __init__(self, proc):
        self.code, self.out, self.err = proc.returncode, proc.stdout, proc.stderr


def run(command):
    proc = subprocess.run(command, capture_output=True, text=True, timeout=180, env=MPI_ENV)
    return Result(proc)


def attn_mpi(ranks, *args):
    """attn-mpi on `ranks` ranks of this machine; ranks=1 runs it alone, without mpirun."""
    if ranks == 1:
        return run([ATTN_MPI, *map(str, args)])
    return run([MPIRUN, "--oversubscribe", "--quiet", "-n", str(ranks), ATTN_MPI, *map(str, args)])


def reference(q, k, v, causal):
    """softmax(q·kᵀ/√D [causal, top-left]) · v in float64, grouped-query heads repeated."""
    q, k, v = (t.astype(np.float64) for t in (q, k, v))
    group = q.shape[1] // k.shape[1]
    k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    if causal:
        L, S = s.shape[-2:]
        s = np.where(np.tril(np.ones((L, S), dtype=bool)), s, -np.inf)
    s -= s.max(axis=-1, keepdims=True)
    p = np.exp(s)
    return (p / p.sum(axis=-1, keepdims=True)) @ v


# ranks, B, H, Hkv, L, S, D, Dv, causal: even and odd splits, L ≠ S, grouped-query heads, head
# sizes that are not a multiple of the vector width.
CASES = [
    (1, 1, 2, 2, 40, 40, 16, 16, True),
    (2, 1, 2, 2, 64, 64, 16, 16, False),
    (2, 2, 3, 3, 100, 100, 32, 32, True),
    (3, 1, 4, 2, 129, 129, 24, 24, True),
    (3, 2, 2, 1, 129, 129, 59, 59, False),
    (3, 1, 2, 2, 129, 77, 32, 20, False),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: "n{}_B{}_H{}_Hkv{}_L{}_S{}_D{}_Dv{}_{}".format(
    *c[:8], "causal" if c[8] else "full"))
def test_ring_matches_one_process_within_twice_its_error(tmp_path, case):
    ranks, B, H, Hkv, L, S, D, Dv, causal = case
    rng = np.random.default_rng(sum(case))
    q = rng.standard_normal((B, H, L, D)).astype(np.float32)
    k = rng.standard_normal((B, Hkv, S, D)).astype(np.float32)
    v = rng.standard_normal((B, Hkv, S, Dv)).astype(np.float32)
    for name, t in (("q", q), ("k", k), ("v", v)):
        np.save(tmp_path / f"{name}.npy", t)
    flags = ["--causal"] if causal else []
    inputs = ["--query", tmp_path / "q.npy", "--key", tmp_path / "k.npy", "--value", tmp_path / "v.npy"]
    one = run([ATTN, "sdpa", *map(str, inputs), *flags, "-o", str(tmp_path / "one.npy")])
    assert one.code == 0, one.err
    ring = attn_mpi(ranks, "sdpa", *inputs, *flags, "-o", tmp_path / "ring.npy")
    assert ring.code == 0, ring.err
    exact = reference(q, k, v, causal)
    one_out, ring_out = np.load(tmp_path / "one.npy"), np.load(tmp_path / "ring.npy")
    assert ring_out.shape == exact.shape
    # FlashAttention's rule: the split computation may add rounding of its own (the blocks'
    # separate normalisations, the merge), but no more than the one-process kernel's own error
    # again. The one-process error is never 0 on these sizes, so the bound is not vacuous.
    one_err = np.abs(one_out - exact).max()
    ring_err = np.abs(ring_out - exact).max()
    assert one_err > 0
    assert ring_err <= 2 * one_err, (
        f"case {case}: ring error {ring_err:.3g} > 2 × one-process error {one_err:.3g}; "
        f"first values ring {ring_out.ravel()[:4]}, float64 {exact.ravel()[:4]}")


def test_bench_reports_attn_bench_fields_and_ranks():
    r = attn_mpi(2, "bench", "--json", "--reps", "2", "--causal", "1,128,2,32")
    assert r.code == 0, r.err
    lines = [json.loads(l) for l in r.out.splitlines()]
    assert len(lines) == 1, r.out  # rank 0 alone prints
    j = lines[0]
    for field in ("B", "N", "H", "D", "causal", "backward", "threads", "median_s", "gflops",
                  "kernel", "isa", "dtype"):
        assert field in j, j
    assert j["ranks"] == 2 and j["N"] == 128 and j["causal"] is True and j["gflops"] > 0


def write_inputs(tmp_path, L):
    rng = np.random.default_rng(1)
    for name in ("q", "k", "v"):
        np.save(tmp_path / f"{name}.npy", rng.standard_normal((1, 1, L, 8)).astype(np.float32))
    return ["--query", tmp_path / "q.npy", "--key", tmp_path / "k.npy", "--value", tmp_path / "v.npy"]


def test_more_ranks_than_rows_is_one_error_and_no_output(tmp_path):
    # 3 ranks need 6 chunks of at least one row; 5 rows leave a rank without work.
    r = attn_mpi(3, "sdpa", *write_inputs(tmp_path, 5), "-o", tmp_path / "out.npy")
    assert r.code == 2, r.err
    line = one_error_line(r)
    assert line == (f"error: {tmp_path / 'q.npy'}: 3 rank(s) need at least 6 query rows "
                    "(two chunks each), got 5, dimension 2"), r.err
    assert not (tmp_path / "out.npy").exists()
    assert not [p for p in os.listdir(tmp_path) if "out.npy" in p]


def test_missing_input_is_one_error_on_every_rank(tmp_path):
    inputs = write_inputs(tmp_path, 16)
    inputs[3] = tmp_path / "absent.npy"
    r = attn_mpi(2, "sdpa", *inputs, "-o", tmp_path / "out.npy")
    assert r.code == 2, r.err
    line = one_error_line(r)
    assert line.startswith(f"error: {tmp_path / 'absent.npy'}: "), r.err
    assert not (tmp_path / "out.npy").exists()


def test_causal_with_fewer_queries_than_keys_is_refused(tmp_path):
    rng = np.random.default_rng(2)
    np.save(tmp_path / "q.npy", rng.standard_normal((1, 1, 8, 4)).astype(np.float32))
    for name in ("k", "v"):
        np.save(tmp_path / f"{name}.npy", rng.standard_normal((1, 1, 12, 4)).astype(np.float32))
    r = attn_mpi(2, "sdpa", "--query", tmp_path / "q.npy", "--key", tmp_path / "k.npy",
                 "--value", tmp_path / "v.npy", "--causal", "-o", tmp_path / "out.npy")
    assert r.code == 2, r.err
    assert "needs as many queries as keys" in one_error_line(r)


def test_bad_flag_is_a_usage_error_printed_once(tmp_path):
    r = attn_mpi(2, "sdpa", *write_inputs(tmp_path, 16), "--attn-mask", "m.npy", "-o", tmp_path / "o.npy")
    assert r.code == 1, r.err
    one_error_line(r)


def test_bench_with_more_ranks_than_rows_is_a_usage_error():
    r = attn_mpi(3, "bench", "1,5,1,8")
    assert r.code == 1, r.err
    assert "3 ranks need N of at least 6" in one_error_line(r)
