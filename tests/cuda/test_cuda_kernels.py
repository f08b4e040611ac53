"""attn's CUDA kernels on a GPU against PyTorch on the same GPU (skipped where there is none, as
in CI). The rule (docs/GPU.md): on every shape, attn's error against a float64 computation on
the same rounded inputs is within 2x the error of PyTorch's own computation in the same
precision (its scaled_dot_product_attention), or within a few units of rounding where PyTorch's
happens to be smaller than that. Outputs are poisoned before each call, and guard regions around
them must come back untouched."""
import contextlib
import os
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)
sys.path.insert(0, os.path.dirname(__file__))
import attn_cuda  # noqa: E402

if not os.path.exists(attn_cuda.library_path()):
    pytest.skip("libattn_cuda.so not built (cmake -DATTN_CUDA=ON)", allow_module_level=True)

import torch.nn.functional as F  # noqa: E402

DEV = "cuda"
UNIT = {torch.float32: 2.0 ** -24, torch.bfloat16: 2.0 ** -8, torch.float16: 2.0 ** -11}
GUARD = 4096
REPORT = []  # (case, attn error, torch error), printed at the end of the run


def guarded(shape, dtype):
    """A tensor of `shape` inside a buffer whose GUARD elements each side hold a known value; its
    own elements poisoned with NaN."""
    n = int(np.prod(shape))
    buf = torch.full((n + 2 * GUARD,), 7.0, dtype=dtype, device=DEV)
    buf[GUARD:GUARD + n] = float("nan")
    return buf, buf[GUARD:GUARD + n].view(*shape)


def check_guards(buf, name):
    n = buf.numel() - 2 * GUARD
    assert bool((buf[:GUARD] == 7.0).all()) and bool((buf[GUARD + n:] == 7.0).all()), f"{name}: a write outside"


def rel_err(x, ref, scale=None):
    """||x - ref|| / ||ref||; where the exact result is (near) zero, as dq is for one key, over a
    thousandth of `scale`, the size the result has on other inputs (rounding noise there is
    not an error of 1e300)."""
    x, ref = x.double(), ref.double()
    den = ref.norm()
    if scale is not None:
        den = torch.maximum(den, 1e-3 * scale.double().norm())
    return ((x - ref).norm() / den.clamp_min(1e-300)).item()


def reference(q, k, v, causal, mask, grad_o=None):
    """Float64 on the same rounded inputs: output and, with grad_o, the three gradients."""
    q64, k64, v64 = (t.double().detach().requires_grad_(True) for t in (q, k, v))
    H, Hkv = q.shape[1], k.shape[1]
    ke = k64.repeat_interleave(H // Hkv, dim=1)
    ve = v64.repeat_interleave(H // Hkv, dim=1)
    s = q64 @ ke.transpose(-1, -2) * q.shape[-1] ** -0.5
    if causal:
        L, S = s.shape[-2:]
        s = s.masked_fill(torch.ones(L, S, dtype=torch.bool, device=DEV).triu(1), float("-inf"))
    if mask is not None:
        s = s + mask.double()
    dead = (s == float("-inf")).all(-1, keepdim=True)  # rows that see no key: weights 0, gradient 0
    p = torch.softmax(s.masked_fill(dead, 0.0), dim=-1) * ~dead
    o = p @ ve
    if grad_o is None:
        return o.detach()
    o.backward(grad_o.double())
    return o.detach(), q64.grad, k64.grad, v64.grad


def torch_same_precision(q, k, v, causal, mask, grad_o=None):
    """PyTorch's sdpa in the inputs' precision (its default backend choice)."""
    qq, kk, vv = (t.detach().clone().requires_grad_(grad_o is not None) for t in (q, k, v))
    H, Hkv = q.shape[1], k.shape[1]
    am = None if mask is None else mask.to(q.dtype)
    if causal and am is not None:
        L, S = q.shape[2], k.shape[2]
        am = am.masked_fill(torch.ones(L, S, dtype=torch.bool, device=DEV).triu(1), float("-inf"))
        causal = False
    o = F.scaled_dot_product_attention(qq, kk, vv, attn_mask=am, is_causal=causal, enable_gqa=H != Hkv)
    if grad_o is None:
        return o.detach()
    o.backward(grad_o)
    return o.detach(), qq.grad, kk.grad, vv.grad


def inputs(B, H, Hkv, L, S, D, Dv, dtype, seed):
    g = torch.Generator(device=DEV).manual_seed(seed)
    mk = lambda *shape: torch.randn(*shape, generator=g, device=DEV, dtype=torch.float32).to(dtype)
    return mk(B, H, L, D), mk(B, Hkv, S, D), mk(B, Hkv, S, Dv), mk(B, H, L, Dv)


@pytest.fixture(scope="module", autouse=True)
def print_errors():
    """After the module: the errors measured (pytest -s shows them; the note quotes this table)."""
    yield
    worst = max(REPORT, key=lambda r: r[1] / max(r[2], 1e-30)) if REPORT else None
    print(f"\n{len(REPORT)} comparisons; worst attn/torch error ratio: {worst}")
    for case, ours, theirs in REPORT[:: max(1, len(REPORT) // 40)]:
        print(f"  {case:60s} attn {ours:.2e}  torch {theirs:.2e}")


def within_rule(ours, theirs, dtype):
    return ours <= max(2.0 * theirs, 4.0 * UNIT[dtype])


SHAPES = [  # B, H, Hkv, L, S, D, Dv
    (1, 1, 1, 1, 1, 64, 64), (1, 2, 2, 7, 7, 64, 64), (2, 3, 3, 63, 65, 64, 64), (1, 2, 2, 65, 63, 128, 128),
    (1, 2, 1, 129, 129, 128, 128), (1, 4, 2, 257, 200, 32, 32), (1, 2, 2, 130, 300, 96, 96),
    (2, 2, 2, 64, 64, 128, 128), (1, 1, 1, 7, 129, 7, 7), (1, 2, 2, 65, 65, 1, 1), (1, 2, 1, 63, 63, 200, 200),
    (1, 2, 2, 33, 47, 64, 48),
]


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32], ids=["bf16", "fp16", "fp32"])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_forward_and_backward_within_twice_pytorch(shape, causal, dtype):
    B, H, Hkv, L, S, D, Dv = shape
    q, k, v, go = inputs(B, H, Hkv, L, S, D, Dv, dtype, seed=hash((shape, causal)) % 1000)
    ob, o = guarded((B, H, L, Dv), dtype)
    lb, lse = guarded((B, H, L), torch.float32)
    attn_cuda.sdpa_forward(q, k, v, causal=causal, out=o, lse=lse)
    torch.cuda.synchronize()
    check_guards(ob, "o"), check_guards(lb, "lse")
    assert not o.isnan().any() and not lse.isnan().any(), "an output element left unwritten"
    ref = reference(q, k, v, causal, None, go)
    theirs = torch_same_precision(q, k, v, causal, None, go)
    e_ours, e_torch = rel_err(o, ref[0]), rel_err(theirs[0], ref[0])
    REPORT.append((f"fwd {shape} causal={causal} {dtype}", e_ours, e_torch))
    assert within_rule(e_ours, e_torch, dtype), (e_ours, e_torch, attn_cuda.forward_path(dtype, D, Dv))
    # lse against float64
    s = q.double() @ k.double().repeat_interleave(H // Hkv, 1).transpose(-1, -2) * D ** -0.5
    if causal:
        s = s.masked_fill(torch.ones(L, S, dtype=torch.bool, device=DEV).triu(1), float("-inf"))
    assert torch.allclose(lse.double(), torch.logsumexp(s, -1), atol=1e-3, rtol=1e-4)

    bufs = [guarded(t.shape, dtype) for t in (q, k, v)]
    dq, dk, dv = attn_cuda.sdpa_backward(q, k, v, o, lse, go, causal=causal, dq=bufs[0][1], dk=bufs[1][1],
                                         dv=bufs[2][1])
    torch.cuda.synchronize()
    for (buf, _), name in zip(bufs, "qkv"):
        check_guards(buf, "d" + name)
    for name, ours, r, t in zip(("dq", "dk", "dv"), (dq, dk, dv), ref[1:], theirs[1:]):
        assert not ours.isnan().any(), f"{name}: an element left unwritten"
        e_ours, e_torch = rel_err(ours, r, scale=go), rel_err(t, r, scale=go)
        REPORT.append((f"{name} {shape} causal={causal} {dtype}", e_ours, e_torch))
        assert within_rule(e_ours, e_torch, dtype), (name, e_ours, e_torch)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32], ids=["bf16", "fp32"])
@pytest.mark.parametrize("D", [64, 128, 24])  # 64 and 128: the wgmma kernels on Hopper
def test_masks_broadcast_and_fully_masked_rows(dtype, D):
    B, H, L, S = 2, 3, 37, 70
    q, k, v, go = inputs(B, H, H, L, S, D, D, dtype, seed=5)
    g = torch.Generator(device=DEV).manual_seed(9)
    keep = torch.rand(B, 1, L, S, generator=g, device=DEV) > 0.3
    keep[0, 0, 5, :] = False  # a row that sees nothing: output 0, lse -inf, gradient 0
    additive = torch.zeros(B, 1, L, S, device=DEV).masked_fill(~keep, float("-inf"))
    additive += torch.randn(B, 1, L, S, generator=g, device=DEV) * 0.5 * keep
    o, lse = attn_cuda.sdpa_forward(q, k, v, mask=additive)
    ref = reference(q, k, v, False, additive, go)
    assert rel_err(o, ref[0]) <= 16 * UNIT[dtype]
    assert (o[0, :, 5] == 0).all() and (lse[0, :, 5] == float("-inf")).all()
    dq, dk, dv = attn_cuda.sdpa_backward(q, k, v, o, lse, go, mask=additive)
    assert (dq[0, :, 5] == 0).all()
    for ours, r in zip((dq, dk, dv), ref[1:]):
        assert rel_err(ours, r) <= 64 * UNIT[dtype]


@pytest.mark.parametrize("scale", [None, 0.3, -0.125], ids=["default", "0.3", "negative"])
@pytest.mark.parametrize("D", [64, 128])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_forward_when_later_keys_dominate_and_other_scales(scale, D, causal):
    """Keys whose scores jump by far more than the lazy rescale's margin in later tiles (the
    running max must move, and O with it), at the default scale, another, and a negative one
    (which the exponent cannot fold): within the rule against float64 in both directions."""
    B, H, L, S = 1, 2, 300, 300
    q, k, v, go = inputs(B, H, H, L, S, D, D, torch.bfloat16, seed=11)
    k[:, :, 130:140] *= 6.0  # tile 3 and on: scores several times those of the first tiles
    k[:, :, 250:] *= 12.0
    c = D ** -0.5 if scale is None else scale
    o, lse = attn_cuda.sdpa_forward(q, k, v, causal=causal, scale=scale)
    s = (q.double() @ k.double().transpose(-1, -2)) * c
    if causal:
        s = s.masked_fill(torch.ones(L, S, dtype=torch.bool, device=DEV).triu(1), float("-inf"))
    ref = torch.softmax(s, -1) @ v.double()
    # PyTorch's fused kernels return NaN for a negative scale (seen on an H200, torch 2.11): its
    # math backend is the same-precision computation there.
    from torch.nn.attention import SDPBackend, sdpa_kernel
    backend = sdpa_kernel(SDPBackend.MATH) if c < 0 else contextlib.nullcontext()
    with backend:
        theirs = F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=c)
    e_ours, e_torch = rel_err(o, ref), rel_err(theirs, ref)
    REPORT.append((f"fwd dominant keys D={D} scale={c:.3f} causal={causal}", e_ours, e_torch))
    assert within_rule(e_ours, e_torch, torch.bfloat16), (e_ours, e_torch)
    assert torch.allclose(lse.double(), torch.logsumexp(s, -1), atol=1e-3, rtol=1e-4)
    dq, dk, dv = attn_cuda.sdpa_backward(q, k, v, o, lse, go, causal=causal, scale=scale)
    qq, kk, vv = (t.double().requires_grad_(True) for t in (q, k, v))
    s64 = (qq @ kk.transpose(-1, -2)) * c
    if causal:
        s64 = s64.masked_fill(torch.ones(L, S, dtype=torch.bool, device=DEV).triu(1), float("-inf"))
    (torch.softmax(s64, -1) @ vv).backward(go.double())
    tq, tk, tv = (t.detach().requires_grad_(True) for t in (q, k, v))
    with sdpa_kernel(SDPBackend.MATH) if c < 0 else contextlib.nullcontext():
        F.scaled_dot_product_attention(tq, tk, tv, is_causal=causal, scale=c).backward(go)
    for name, ours, r, t in (("dq", dq, qq.grad, tq.grad), ("dk", dk, kk.grad, tk.grad), ("dv", dv, vv.grad, tv.grad)):
        e_ours, e_torch = rel_err(ours, r, scale=go), rel_err(t, r, scale=go)
        REPORT.append((f"{name} dominant keys D={D} scale={c:.3f} causal={causal}", e_ours, e_torch))
        assert within_rule(e_ours, e_torch, torch.bfloat16), (name, e_ours, e_torch)


def test_backward_is_deterministic():
    q, k, v, go = inputs(2, 4, 2, 300, 300, 64, 64, torch.bfloat16, seed=3)
    o, lse = attn_cuda.sdpa_forward(q, k, v, causal=True)
    first = attn_cuda.sdpa_backward(q, k, v, o, lse, go, causal=True)
    again = attn_cuda.sdpa_backward(q, k, v, o, lse, go, causal=True)
    for a, b in zip(first, again):
        assert torch.equal(a, b)


def test_tensor_cores_take_their_shapes():
    assert "tensor cores" in attn_cuda.forward_path(torch.bfloat16, 128, 128)
    assert "tensor cores" in attn_cuda.forward_path(torch.float16, 64, 64)
    assert "CUDA cores" in attn_cuda.forward_path(torch.float32, 64, 64)
    assert "CUDA cores" in attn_cuda.forward_path(torch.bfloat16, 64, 48)


@pytest.mark.skipif(not os.environ.get("ATTN_BIN"), reason="ATTN_BIN (a CLI built with -DATTN_CUDA=ON) not set")
@pytest.mark.parametrize("dtype", ["bf16", "float32"])
def test_cli_device_cuda_matches_cpu(tmp_path, dtype):
    rng = np.random.default_rng(1)
    files = {}
    for name, shape in (("q", (1, 4, 65, 64)), ("k", (1, 2, 63, 64)), ("v", (1, 2, 63, 64)), ("go", (1, 4, 65, 64))):
        files[name] = tmp_path / f"{name}.npy"
        np.save(files[name], rng.standard_normal(shape).astype(np.float32))
    outs = {}
    for device in ("cpu", "cuda"):
        out = {n: tmp_path / f"{n}_{device}.npy" for n in ("o", "dq", "dk", "dv")}
        cmd = [os.environ["ATTN_BIN"], "sdpa", "--query", files["q"], "--key", files["k"], "--value", files["v"],
               "--causal", "--dtype", dtype, "--device", device, "-o", out["o"], "--grad-output", files["go"],
               "--dq", out["dq"], "--dk", out["dk"], "--dv", out["dv"]]
        proc = subprocess.run(list(map(str, cmd)), capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        outs[device] = {n: np.load(p) for n, p in out.items()}
    tol = 2e-2 if dtype == "bf16" else 1e-5
    for n in ("o", "dq", "dk", "dv"):
        a, b = outs["cuda"][n], outs["cpu"][n]
        assert np.linalg.norm(a - b) / np.linalg.norm(b) < tol, n
