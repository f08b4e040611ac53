"""PyTorch autograd as the oracle for the sdpa backward: `attn sdpa --grad-output G.npy --dq --dk
--dv` against torch's gradients of sum(G * sdpa(q, k, v)), computed in float64 from the same
float32 inputs. The reference kernel accumulates in double and rounds once, so its relative
error is a few float32 ulps (1e-5 leaves a wide margin). The fused kernel works in float32: its
relative error grows like ε·√(reduction length) (here well under 1e-5 for these sizes; 5e-5
leaves room), still far below what a semantic slip (a wrong scale, mask, head group or sign)
would cost."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")

REL = {"reference": 1e-5, "fused": 5e-5}


def rel_error(got, want, floor=1e-30):
    """Relative L2 error; floor stands in for |want| where the gradient vanishes exactly (with
    one key, dq = dk = 0 in exact arithmetic and float32 leaves rounding residue of ~ε·|g|)."""
    want = np.asarray(want, dtype=np.float64)
    return np.linalg.norm(np.asarray(got, np.float64) - want) / max(np.linalg.norm(want), floor)


def save(path, array):
    np.save(path, array)
    return path


def rand(rng, *shape):
    return rng.uniform(-1, 1, size=shape).astype(np.float32)


def torch_grads(q, k, v, g, mask=None, causal=False, scale=None):
    """dq, dk, dv of sum(g * o) by torch autograd in float64, o = softmax(q·kᵀ·scale + mask)·v
    with K/V heads repeated for grouped-query attention (enable_gqa)."""
    q, k, v = (torch.from_numpy(x).double().requires_grad_() for x in (q, k, v))
    h, hkv = q.shape[1], k.shape[1]
    kr, vr = k.repeat_interleave(h // hkv, dim=1), v.repeat_interleave(h // hkv, dim=1)
    scale = 1 / np.sqrt(q.shape[-1]) if scale is None else scale
    s = q @ kr.transpose(-2, -1) * scale
    L, S = s.shape[-2:]
    if causal:
        s = s.masked_fill(~torch.ones(L, S, dtype=torch.bool).tril(), float("-inf"))
    if mask is not None:
        m = torch.from_numpy(mask)
        s = s.masked_fill(~m, float("-inf")) if m.dtype == torch.bool else s + m.double()
    o = torch.softmax(s, dim=-1) @ vr
    (o * torch.from_numpy(g).double()).sum().backward()
    return q.grad.numpy(), k.grad.numpy(), v.grad.numpy()


def run_backward(attn, tmp_path, q, k, v, g, *extra, kernel="fused"):
    args = ["sdpa", "--query", save(tmp_path / "q.npy", q), "--key", save(tmp_path / "k.npy", k),
            "--value", save(tmp_path / "v.npy", v), "-o", tmp_path / "o.npy",
            "--grad-output", save(tmp_path / "g.npy", g), "--dq", tmp_path / "dq.npy",
            "--dk", tmp_path / "dk.npy", "--dv", tmp_path / "dv.npy", "--kernel", kernel, *extra]
    r = attn(*args)
    assert r.code == 0, r.err
    return [np.load(tmp_path / f"{n}.npy") for n in ("dq", "dk", "dv")]


SHAPES = [  # B, H, Hkv, L, S, D, Dv
    (1, 1, 1, 1, 1, 8, 8), (2, 4, 4, 7, 7, 16, 16), (1, 4, 2, 5, 9, 8, 12), (2, 6, 1, 9, 4, 32, 32),
    (1, 2, 2, 65, 63, 59, 59), (1, 2, 1, 130, 129, 64, 64),
]


@pytest.mark.parametrize("kernel", ["fused", "reference"])
@pytest.mark.parametrize("b,h,hkv,l,s,d,dv", SHAPES)
@pytest.mark.parametrize("causal", [False, True])
def test_gradients_match_torch_autograd(attn, tmp_path, kernel, b, h, hkv, l, s, d, dv, causal):
    if causal and l > s:
        l = s  # rows past S would see no key: the fully-masked test covers those
    rng = np.random.default_rng(l * 31 + s + d)
    q, k, v = rand(rng, b, h, l, d), rand(rng, b, hkv, s, d), rand(rng, b, hkv, s, dv)
    g = rand(rng, b, h, l, dv)
    got = run_backward(attn, tmp_path, q, k, v, g, *(["--causal"] if causal else []), kernel=kernel)
    for name, x, want in zip(("dq", "dk", "dv"), got, torch_grads(q, k, v, g, causal=causal)):
        assert x.shape == want.shape, name
        assert rel_error(x, want, floor=1e-2 * np.linalg.norm(g)) < REL[kernel], name


@pytest.mark.parametrize("kernel", ["fused", "reference"])
def test_causal_with_fewer_queries_than_keys(attn, tmp_path, kernel):
    rng = np.random.default_rng(3)
    q, k, v, g = rand(rng, 1, 2, 3, 8), rand(rng, 1, 2, 70, 8), rand(rng, 1, 2, 70, 8), rand(rng, 1, 2, 3, 8)
    got = run_backward(attn, tmp_path, q, k, v, g, "--causal", kernel=kernel)
    want = torch_grads(q, k, v, g, causal=True)
    for x, w in zip(got, want):
        assert rel_error(x, w) < REL[kernel]
    assert np.all(got[1][:, :, 3:] == 0) and np.all(got[2][:, :, 3:] == 0)  # keys nobody sees


@pytest.mark.parametrize("kernel", ["fused", "reference"])
def test_masks_and_scale(attn, tmp_path, kernel):
    rng = np.random.default_rng(10)
    b, h, l, s, d = 2, 2, 5, 6, 8
    q, k, v, g = rand(rng, b, h, l, d), rand(rng, b, h, s, d), rand(rng, b, h, s, d), rand(rng, b, h, l, d)
    bool_mask = rng.random((l, s)) < 0.7
    bool_mask[:, 2] = True  # every row keeps a key
    for i, mask in enumerate([rand(rng, l, s), rand(rng, b, 1, l, s), bool_mask]):
        for scale in (None, 0.3):
            extra = ["--attn-mask", save(tmp_path / "m.npy", mask)]
            if scale is not None:
                extra += ["--scale", scale]
            got = run_backward(attn, tmp_path, q, k, v, g, *extra, kernel=kernel)
            want = torch_grads(q, k, v, g, mask=mask, scale=scale)
            for name, x, w in zip(("dq", "dk", "dv"), got, want):
                assert rel_error(x, w) < REL[kernel], (i, scale, name)


@pytest.mark.parametrize("kernel", ["fused", "reference"])
def test_fully_masked_row_gives_zero_gradients(attn, tmp_path, kernel):
    """Row 1 sees no key: attn's output there is 0 whatever q, k, v are, so its gradient with
    respect to everything is 0. (PyTorch 1.13 gives NaN for that row; the oracle instead
    unmasks it and zeroes its output gradient, which takes it out of the loss.)"""
    rng = np.random.default_rng(11)
    q, k, v, g = rand(rng, 1, 2, 4, 8), rand(rng, 1, 2, 5, 8), rand(rng, 1, 2, 5, 8), rand(rng, 1, 2, 4, 8)
    mask = np.ones((4, 5), bool)
    mask[1] = False
    got = run_backward(attn, tmp_path, q, k, v, g, "--attn-mask", save(tmp_path / "m.npy", mask),
                       kernel=kernel)
    assert np.all(got[0][:, :, 1] == 0)
    g_oracle = g.copy()
    g_oracle[:, :, 1] = 0
    want = torch_grads(q, k, v, g_oracle, mask=np.ones((4, 5), bool))
    for x, w in zip(got, want):
        assert rel_error(x, w) < REL[kernel]


def test_backward_outputs_are_all_written_or_none(attn, tmp_path):
    rng = np.random.default_rng(12)
    q, g = rand(rng, 1, 1, 3, 4), rand(rng, 1, 1, 3, 4)
    base = ["sdpa", "--query", save(tmp_path / "q.npy", q), "--key", tmp_path / "q.npy",
            "--value", tmp_path / "q.npy", "-o", tmp_path / "o.npy"]
    # Only some of the four: a usage error, nothing written.
    r = attn(*base, "--grad-output", save(tmp_path / "g.npy", g), "--dq", tmp_path / "dq.npy")
    assert r.code == 1 and "give all four or none" in r.err
    assert not (tmp_path / "o.npy").exists() and not (tmp_path / "dq.npy").exists()
    # One output cannot be written: exit 2, and none of the others appears.
    r = attn(*base, "--grad-output", tmp_path / "g.npy", "--dq", tmp_path / "dq.npy",
             "--dk", tmp_path / "dk.npy", "--dv", tmp_path / "missing-dir" / "dv.npy")
    assert r.code == 2, r.err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.npy", "q.npy"]
    # A gradient of the wrong shape is an input error naming the file.
    r = attn(*base, "--grad-output", save(tmp_path / "bad.npy", rand(rng, 1, 1, 2, 4)),
             "--dq", tmp_path / "dq.npy", "--dk", tmp_path / "dk.npy", "--dv", tmp_path / "dv.npy")
    assert r.code == 2 and "bad.npy" in r.err and "shape" in r.err
