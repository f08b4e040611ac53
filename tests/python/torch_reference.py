"""The float64 oracles the Python-module tests compare with: PyTorch 1.13 has no
scaled_dot_product_attention, so its math is written out here in torch, in float64, from the same
float32 inputs; nn.MultiheadAttention is run as is, in float64."""
import numpy as np
import torch

# attn accumulates in double (reference) or in float32 tiles with a rescaled softmax (fused), and
# rounds to float32: a few float32 ulps of relative L2 error against float64. 1e-5 leaves a wide
# margin and still catches any semantic slip (a wrong head, scale, mask sign or bias).
REL = 1e-5


def rel_error(got, want):
    want = np.asarray(want, dtype=np.float64)
    return np.linalg.norm(np.asarray(got, np.float64) - want) / max(np.linalg.norm(want), 1e-30)


def sdpa(q, k, v, causal=False, scale=None, attn_mask=None):
    """softmax(q·kᵀ·scale + mask)·v with PyTorch's conventions (bool mask True = takes part,
    top-left causal, GQA by repeating K/V heads); a fully masked row gives 0 (attn's choice)."""
    q, k, v = (torch.from_numpy(np.asarray(x)).double() for x in (q, k, v))
    h, hkv = q.shape[1], k.shape[1]
    k = k.repeat_interleave(h // hkv, dim=1)
    v = v.repeat_interleave(h // hkv, dim=1)
    scale = 1.0 / np.sqrt(q.shape[-1]) if scale is None else scale
    scores = q @ k.transpose(-1, -2) * scale
    L, S = scores.shape[-2:]
    if attn_mask is not None:
        m = torch.from_numpy(np.asarray(attn_mask))
        if m.dtype == torch.bool:
            scores = scores.masked_fill(~m, float("-inf"))
        else:
            scores = scores + m.double()
    if causal:
        scores = scores.masked_fill(torch.ones(L, S, dtype=torch.bool).triu(1), float("-inf"))
    weights = torch.softmax(scores, dim=-1).nan_to_num(0.0)
    return (weights @ v).numpy(), weights.numpy()


def make_mha(e, h, bias=True, kdim=None, vdim=None, seed=0):
    """An nn.MultiheadAttention with non-zero biases, so that a dropped bias cannot pass."""
    torch.manual_seed(seed)
    m = torch.nn.MultiheadAttention(e, h, bias=bias, kdim=kdim, vdim=vdim, batch_first=True)
    with torch.no_grad():
        for name, p in m.named_parameters():
            if "bias" in name:
                p.normal_()
    return m


def mha(m, query, key=None, value=None, **kwargs):
    """The module's own forward in float64; returns (output, weights) as NumPy arrays."""
    m64 = torch.nn.MultiheadAttention(m.embed_dim, m.num_heads, bias=m.in_proj_bias is not None,
                                      kdim=m.kdim, vdim=m.vdim, batch_first=True).double()
    m64.load_state_dict({k: t.double() for k, t in m.state_dict().items()})
    tq = torch.from_numpy(query).double()
    tk = tq if key is None else torch.from_numpy(key).double()
    tv = tk if value is None else torch.from_numpy(value).double()
    for name in ("key_padding_mask", "attn_mask"):
        if kwargs.get(name) is not None:
            t = torch.from_numpy(kwargs[name])
            kwargs[name] = t if t.dtype == torch.bool else t.double()
    with torch.no_grad():
        out, w = m64(tq, tk, tv, need_weights=True, **kwargs)
    return out.numpy(), w.numpy()
