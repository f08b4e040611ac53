"""attn's trainable attention layer (src/nn/attention_layer: queries from one sequence, keys and
values from another) against PyTorch's nn.MultiheadAttention(batch_first=True) in float64: the
output and the gradients of the inputs and of every weight, with L ≠ S both ways, key padding
(key_padding_mask) and the causal mask (attn_mask = triu(ones(L, S), 1), top-left as attn's).
The layer runs through tests/oracle/attention_layer_npy.cpp (the attn_attention_layer_npy
target), which reads and writes .npy files."""
import math
import os
import subprocess

import numpy as np
import pytest

from conftest import ATTN

torch = pytest.importorskip("torch")

LAYER = os.environ.get("ATTN_ATTENTION_LAYER_NPY") or os.path.join(
    os.path.dirname(ATTN), "attn_attention_layer_npy")

# (B, L, S, E, key width, heads, key lengths or None, causal): L ≠ S both ways, a single query,
# a single key, a tile (64) and one past it, head sizes 15 and 5 (odd: no vector loop ends on a
# full register), key width ≠ E (PyTorch's kdim = vdim: separate projection weights) and = E
# (its packed in_proj_weight).
CASES = [
    (2, 7, 13, 15, 7, 3, [13, 5], False),
    (2, 13, 7, 15, 15, 1, [7, 3], True),
    (2, 65, 129, 15, 9, 3, [129, 64], True),
    (3, 129, 65, 12, 12, 3, None, True),
    (2, 129, 1, 15, 7, 3, None, False),
    (2, 1, 65, 15, 15, 1, [65, 1], False),
]


def norm(a):
    return float(np.sqrt(np.sum(np.asarray(a, dtype=np.float64) ** 2)))


def run_layer(tmp_path, arrays, heads, causal):
    for name, a in arrays.items():
        np.save(tmp_path / f"{name}.npy", np.ascontiguousarray(a, dtype=np.float32))
    r = subprocess.run([LAYER, str(tmp_path), str(heads), "1" if causal else "0"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    names = ["y", "dx_q", "dx_kv", "dwq", "dbq", "dwk", "dbk", "dwv", "dbv", "dwo", "dbo"]
    return {n: np.load(tmp_path / f"{n}.npy").astype(np.float64) for n in names}


def torch_layer(arrays, heads, causal, lengths):
    """nn.MultiheadAttention holding the same weights, run in float64; its output and gradients."""
    t = {k: torch.tensor(v, dtype=torch.float64) for k, v in arrays.items() if k != "key_lengths"}
    e, kv = t["wq"].shape[0], t["wk"].shape[1]
    mha = torch.nn.MultiheadAttention(e, heads, batch_first=True, kdim=kv, vdim=kv, dtype=torch.float64)
    with torch.no_grad():
        if kv == e:  # packed: rows [0, E) q, [E, 2E) k, [2E, 3E) v
            mha.in_proj_weight.copy_(torch.cat([t["wq"], t["wk"], t["wv"]]))
        else:
            mha.q_proj_weight.copy_(t["wq"])
            mha.k_proj_weight.copy_(t["wk"])
            mha.v_proj_weight.copy_(t["wv"])
        mha.in_proj_bias.copy_(torch.cat([t["bq"], t["bk"], t["bv"]]))
        mha.out_proj.weight.copy_(t["wo"])
        mha.out_proj.bias.copy_(t["bo"])
    x_q = t["x_q"].clone().requires_grad_()
    x_kv = t["x_kv"].clone().requires_grad_()
    L, S = x_q.shape[1], x_kv.shape[1]
    padding = None
    if lengths is not None:  # True: that key is padding
        padding = torch.arange(S)[None, :] >= torch.tensor(lengths)[:, None]
    mask = torch.triu(torch.ones(L, S, dtype=torch.bool), diagonal=1) if causal else None
    y, _ = mha(x_q, x_kv, x_kv, key_padding_mask=padding, attn_mask=mask, need_weights=False)
    y.backward(t["dy"])
    if kv == e:
        dw = mha.in_proj_weight.grad.split(e)
    else:
        dw = (mha.q_proj_weight.grad, mha.k_proj_weight.grad, mha.v_proj_weight.grad)
    db = mha.in_proj_bias.grad.split(e)
    out = {"y": y, "dx_q": x_q.grad, "dx_kv": x_kv.grad, "dwq": dw[0], "dwk": dw[1], "dwv": dw[2],
           "dbq": db[0], "dbk": db[1], "dbv": db[2], "dwo": mha.out_proj.weight.grad,
           "dbo": mha.out_proj.bias.grad}
    return {k: v.detach().numpy() for k, v in out.items()}


# The gradients through the scores vanish in exact arithmetic where a row sees one key, and the
# key bias's always does (the softmax cancels a shift shared by a row's scores): each is judged
# against the larger of its own norm and its value-path counterpart's (as test_attention_layer.cpp).
COUNTERPART = {"dx_q": "dx_kv", "dwq": "dwv", "dbq": "dbv", "dwk": "dwv", "dbk": "dbv"}


@pytest.mark.parametrize("case", CASES, ids=lambda c: "B{}_L{}_S{}_E{}_kv{}_H{}_{}_{}".format(
    *c[:6], "padded" if c[6] else "whole", "causal" if c[7] else "full"))
def test_attention_layer_matches_multihead_attention(tmp_path, case):
    if not os.path.exists(LAYER):
        pytest.fail(f"{LAYER} not found: build the attn_attention_layer_npy target "
                    "(or set ATTN_ATTENTION_LAYER_NPY)")
    B, L, S, E, kv, heads, lengths, causal = case
    rng = np.random.default_rng(L * 1000 + S)

    def values(*shape, scale=1.0):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    # Projections larger than PyTorch's initial ones, so the softmax is far from uniform.
    arrays = {"x_q": values(B, L, E), "x_kv": values(B, S, kv), "dy": values(B, L, E),
              "wq": values(E, E, scale=3 / math.sqrt(E)), "wk": values(E, kv, scale=3 / math.sqrt(kv)),
              "wv": values(E, kv, scale=1 / math.sqrt(kv)), "wo": values(E, E, scale=1 / math.sqrt(E)),
              "bq": values(E, scale=0.1), "bk": values(E, scale=0.1), "bv": values(E, scale=0.1),
              "bo": values(E, scale=0.1)}
    if lengths is not None:
        arrays["key_lengths"] = np.array(lengths, dtype=np.float32)
    got = run_layer(tmp_path, arrays, heads, causal)
    want = torch_layer(arrays, heads, causal, lengths)
    # attn computes in float32, PyTorch here in float64 on the same (float32) values: the
    # difference is float32's rounding, about ε·√n relative for sums of n terms of random sign;
    # the longest are the weight gradients' over B·max(L, S) rows, and 8·ε·√(B·max(L, S)·E) is
    # the bound test_attention_layer.cpp measures against (its worst case uses 0.37 of it).
    eps = np.finfo(np.float32).eps / 2
    tolerance = 8 * eps * math.sqrt(B * max(L, S) * E)
    failures = []
    for name, w in want.items():
        assert got[name].shape == w.shape, name
        scale = max(norm(w), norm(want[COUNTERPART[name]]) if name in COUNTERPART else 0.0)
        error = norm(got[name] - w) / scale
        if error > tolerance:
            failures.append(f"{name}: relative error {error:.3g} > {tolerance:.3g} "
                            f"(attn {got[name].ravel()[:3]}, torch {w.ravel()[:3]})")
    assert not failures, f"{case}: " + "; ".join(failures)
