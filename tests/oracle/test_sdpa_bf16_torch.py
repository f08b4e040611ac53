"""attn sdpa --dtype bf16 against PyTorch, with FlashAttention's test rule: attn's error against a
float64 computation on the bf16-rounded inputs is at most twice the error of PyTorch's own bf16
math attention (bf16 tensors: matmul, softmax, matmul) on the same inputs, forward and backward
(PyTorch's autograd on bf16 tensors). Also the CLI contract
(float32 files in and out), the forced emulation (ATTN_BF16=emulate: the same bits), the
reference path (ATTN_ISA=reference) and the bench's JSON."""
import json
import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from conftest import one_error_line


def sdpa_files(tmp_path, rng, B, H, L, S, D, Dv, Hkv=None):
    Hkv = Hkv or H
    arrays = {"q": rng.standard_normal((B, H, L, D)), "k": rng.standard_normal((B, Hkv, S, D)),
              "v": rng.standard_normal((B, Hkv, S, Dv))}
    paths = {}
    for name, a in arrays.items():
        paths[name] = tmp_path / f"{name}.npy"
        np.save(paths[name], a.astype(np.float32))
    return {n: a.astype(np.float32) for n, a in arrays.items()}, paths


def run_sdpa(attn, paths, out, *extra, env=None):
    r = attn("sdpa", "--dtype", "bf16", "--query", paths["q"], "--key", paths["k"], "--value",
             paths["v"], "-o", out, *extra, env=env)
    assert r.code == 0, r.err
    return np.load(out)


def torch_bf16_and_exact(a, causal):
    """(PyTorch's bf16 math attention, float64 attention on the bf16-rounded inputs)."""
    q, k, v = (torch.from_numpy(a[n]).bfloat16() for n in "qkv")
    rep = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
    L, S, D = q.shape[2], k.shape[2], q.shape[3]
    hidden = torch.ones(L, S, dtype=torch.bool).triu(1) if causal else None

    def attention(q, k, v):
        s = (q @ k.transpose(-1, -2)) * (1.0 / D ** 0.5)
        if hidden is not None:
            s = s.masked_fill(hidden, float("-inf"))
        return torch.softmax(s, -1) @ v

    return attention(q, k, v).double().numpy(), attention(q.double(), k.double(), v.double()).numpy()


@pytest.mark.parametrize("shape,causal", [
    ((1, 2, 7, 7, 7, 7, None), False),
    ((2, 2, 63, 65, 64, 64, None), True),
    ((1, 3, 129, 129, 33, 17, None), False),
    ((1, 4, 130, 300, 64, 64, 2), True),
    ((1, 2, 200, 257, 128, 128, None), False),
])
def test_bf16_within_twice_torch_bf16_error(attn, tmp_path, shape, causal):
    B, H, L, S, D, Dv, Hkv = shape
    a, paths = sdpa_files(tmp_path, np.random.default_rng(L * S + D), B, H, L, S, D, Dv, Hkv)
    got = run_sdpa(attn, paths, tmp_path / "o.npy", *(["--causal"] if causal else []))
    assert got.dtype == np.float32 and got.shape == (B, H, L, Dv)
    torch_bf16, exact = torch_bf16_and_exact(a, causal)
    ours, theirs = np.abs(got - exact).max(), np.abs(torch_bf16 - exact).max()
    assert ours <= 2 * theirs, (ours, theirs)
    # And it is bf16, not float32: the float32 kernel would be far closer to the exact result
    # on the unrounded inputs than this.
    r = attn("sdpa", "--query", paths["q"], "--key", paths["k"], "--value", paths["v"], "-o",
             tmp_path / "f.npy", *(["--causal"] if causal else []))
    assert r.code == 0
    assert not np.array_equal(np.load(tmp_path / "f.npy"), got)


def test_forced_emulation_and_thread_counts_give_the_same_bits(attn, tmp_path):
    _, paths = sdpa_files(tmp_path, np.random.default_rng(5), 2, 4, 129, 300, 65, 64, Hkv=2)
    native = run_sdpa(attn, paths, tmp_path / "a.npy", "--causal")
    for env in ({"ATTN_BF16": "emulate"}, {"OMP_NUM_THREADS": "1"}, {"OMP_NUM_THREADS": "3"}):
        got = run_sdpa(attn, paths, tmp_path / "b.npy", "--causal", env={**os.environ, **env})
        assert np.array_equal(got.view(np.uint32), native.view(np.uint32)), env


def test_reference_path_is_the_exact_result_on_rounded_inputs(attn, tmp_path):
    a, paths = sdpa_files(tmp_path, np.random.default_rng(6), 1, 2, 33, 40, 16, 16)
    got = run_sdpa(attn, paths, tmp_path / "o.npy", env={**os.environ, "ATTN_ISA": "reference"})
    _, exact = torch_bf16_and_exact(a, False)
    assert np.abs(got - exact).max() < 1e-6
    fused = run_sdpa(attn, paths, tmp_path / "f.npy")
    assert 0 < np.abs(fused - exact).max() < 2e-2


def test_bench_reports_the_dtype(attn):
    r = attn("bench", "--dtype", "bf16", "--json", "--reps", "1", "1,64,2,16")
    assert r.code == 0, r.err
    line = json.loads(r.out.strip().splitlines()[-1])
    assert line["dtype"] == "bf16" and line["gflops"] > 0
    r = attn("bench", "--dtype", "bf16", "--backward", "--json", "--reps", "1", "1,64,2,16")
    assert r.code == 0, r.err
    line = json.loads(r.out.strip().splitlines()[-1])
    assert line["dtype"] == "bf16" and line["backward"] and line["gflops"] > 0
    r = attn("bench", "--json", "--reps", "1", "1,64,2,16")
    assert json.loads(r.out.strip().splitlines()[-1])["dtype"] == "float32"


def test_bad_dtype_is_a_usage_error(attn, tmp_path):
    _, paths = sdpa_files(tmp_path, np.random.default_rng(7), 1, 1, 4, 4, 8, 8)
    r = attn("sdpa", "--dtype", "fp8", "--query", paths["q"], "--key", paths["k"], "--value",
             paths["v"], "-o", tmp_path / "o.npy")
    assert r.code == 1 and "fp8" in one_error_line(r)
    assert not (tmp_path / "o.npy").exists()


def torch_bf16_grads_and_exact(a, g, causal):
    """The gradients (dq, dk, dv) of PyTorch's bf16 math attention, and of float64 attention on
    the bf16-rounded inputs."""
    D = a["q"].shape[3]
    L, S = a["q"].shape[2], a["k"].shape[2]
    rep = a["q"].shape[1] // a["k"].shape[1]
    hidden = torch.ones(L, S, dtype=torch.bool).triu(1) if causal else None

    def grads(dtype):
        q, k, v = (torch.from_numpy(a[n]).bfloat16().to(dtype).requires_grad_() for n in "qkv")
        s = (q @ k.repeat_interleave(rep, 1).transpose(-1, -2)) * (1.0 / D ** 0.5)
        if hidden is not None:
            s = s.masked_fill(hidden, float("-inf"))
        o = torch.softmax(s, -1) @ v.repeat_interleave(rep, 1)
        o.backward(torch.from_numpy(g).bfloat16().to(dtype))
        return [t.grad.double().numpy() for t in (q, k, v)]

    return grads(torch.bfloat16), grads(torch.float64)


@pytest.mark.parametrize("shape,causal", [
    ((1, 2, 7, 7, 7, 7, None), False),
    ((2, 2, 63, 65, 64, 64, None), True),
    ((1, 3, 129, 129, 33, 17, None), False),
    ((1, 4, 130, 300, 64, 64, 2), True),
])
def test_bf16_backward_within_twice_torch_bf16_error(attn, tmp_path, shape, causal):
    B, H, L, S, D, Dv, Hkv = shape
    rng = np.random.default_rng(L + S * D)
    a, paths = sdpa_files(tmp_path, rng, B, H, L, S, D, Dv, Hkv)
    g = rng.standard_normal((B, H, L, Dv)).astype(np.float32)
    np.save(tmp_path / "g.npy", g)
    outs = [tmp_path / f"{n}.npy" for n in ("dq", "dk", "dv")]
    run_sdpa(attn, paths, tmp_path / "o.npy", *(["--causal"] if causal else []), "--grad-output",
             tmp_path / "g.npy", "--dq", outs[0], "--dk", outs[1], "--dv", outs[2])
    theirs, exact = torch_bf16_grads_and_exact(a, g, causal)
    for name, out, t, e in zip(("dq", "dk", "dv"), outs, theirs, exact):
        got = np.load(out)
        assert got.dtype == np.float32 and got.shape == e.shape
        assert np.abs(got - e).max() <= 2 * np.abs(t - e).max(), name
    # The emulation gives the same gradients, bit for bit.
    emulated = [tmp_path / f"e{n}.npy" for n in ("dq", "dk", "dv")]
    run_sdpa(attn, paths, tmp_path / "eo.npy", *(["--causal"] if causal else []), "--grad-output",
             tmp_path / "g.npy", "--dq", emulated[0], "--dk", emulated[1], "--dv", emulated[2],
             env={**os.environ, "ATTN_BF16": "emulate"})
    for out, em in zip(outs, emulated):
        assert np.array_equal(np.load(out).view(np.uint32), np.load(em).view(np.uint32))
