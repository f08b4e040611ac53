"""PyTorch as the oracle for semantics: attn mha against nn.MultiheadAttention(batch_first=True),
attn sdpa against the math of scaled_dot_product_attention, both computed by torch in float64 from
the same float32 inputs. attn accumulates in double and rounds once to float32, so its relative
error against the float64 oracle is a few float32 ulps; 1e-5 leaves a wide margin while still
catching any semantic slip (a wrong head split, scale, mask sign or bias)."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")

from conftest import write_safetensors

REL = 1e-5


def rel_error(got, want):
    want = np.asarray(want, dtype=np.float64)
    return np.linalg.norm(np.asarray(got, np.float64) - want) / max(np.linalg.norm(want), 1e-30)


def save(path, array):
    np.save(path, array)
    return path


def make_mha(e, h, bias=True, kdim=None, vdim=None, seed=0):
    torch.manual_seed(seed)
    m = torch.nn.MultiheadAttention(e, h, bias=bias, kdim=kdim, vdim=vdim, batch_first=True)
    with torch.no_grad():  # non-zero biases, so a dropped bias cannot pass
        for name, p in m.named_parameters():
            if "bias" in name:
                p.normal_()
    return m


def run_mha_case(attn, tmp_path, m, h, q, k=None, v=None, causal=False, kpm=None, mask=None):
    """Runs attn mha and torch on the same inputs; returns (attn out, torch out, attn w, torch w)."""
    weights = tmp_path / "w.safetensors"
    write_safetensors(weights, {n: t.detach().numpy() for n, t in m.state_dict().items()})
    args = ["mha", "--weights", weights, "--heads", h, "--query", save(tmp_path / "q.npy", q),
            "-o", tmp_path / "o.npy", "--attn-weights-out", tmp_path / "aw.npy"]
    if k is not None:
        args += ["--key", save(tmp_path / "k.npy", k), "--value", save(tmp_path / "v.npy", v)]
    if causal:
        args += ["--causal"]
    if kpm is not None:
        args += ["--key-padding-mask", save(tmp_path / "kpm.npy", kpm)]
    if mask is not None:
        args += ["--attn-mask", save(tmp_path / "mask.npy", mask)]
    r = attn(*args)
    assert r.code == 0, r.err

    m64 = m.double()
    tq = torch.from_numpy(q).double()
    tk = tq if k is None else torch.from_numpy(k).double()
    tv = tq if v is None else torch.from_numpy(v).double()
    L, S = tq.shape[-2], tk.shape[-2]
    tmask = None if mask is None else torch.from_numpy(mask)
    if tmask is not None and tmask.dtype != torch.bool:
        tmask = tmask.double()
    if causal:  # PyTorch's is_causal is only a hint; the mask itself must be given
        causal_mask = torch.ones(L, S, dtype=torch.bool).triu(1)
        tmask = causal_mask if tmask is None else tmask | causal_mask
    tkpm = None if kpm is None else torch.from_numpy(kpm)
    if tkpm is not None and tkpm.dtype != torch.bool:
        tkpm = tkpm.double()
    with torch.no_grad():
        out, w = m64(tq, tk, tv, key_padding_mask=tkpm, attn_mask=tmask, need_weights=True,
                     average_attn_weights=False)
    return np.load(tmp_path / "o.npy"), out.numpy(), np.load(tmp_path / "aw.npy"), w.numpy()


def rand(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("b,l,e,h", [(1, 1, 4, 1), (2, 5, 8, 2), (3, 7, 12, 4), (2, 13, 16, 8)])
def test_mha_self_attention(attn, tmp_path, b, l, e, h):
    rng = np.random.default_rng(b * 100 + l)
    o, want, w, want_w = run_mha_case(attn, tmp_path, make_mha(e, h), h, rand(rng, b, l, e))
    assert o.shape == want.shape and w.shape == (b, h, l, l)
    assert rel_error(o, want) < REL and rel_error(w, want_w) < REL


def test_mha_cross_attention(attn, tmp_path):
    rng = np.random.default_rng(1)
    q, k, v = rand(rng, 2, 3, 8), rand(rng, 2, 6, 8), rand(rng, 2, 6, 8)
    o, want, w, want_w = run_mha_case(attn, tmp_path, make_mha(8, 2), 2, q, k, v)
    assert w.shape == (2, 2, 3, 6)
    assert rel_error(o, want) < REL and rel_error(w, want_w) < REL


def test_mha_kdim_vdim_and_no_bias(attn, tmp_path):
    rng = np.random.default_rng(2)
    q, k, v = rand(rng, 2, 4, 8), rand(rng, 2, 5, 3), rand(rng, 2, 5, 7)
    for bias in (True, False):
        m = make_mha(8, 4, bias=bias, kdim=3, vdim=7, seed=int(bias))
        o, want, w, want_w = run_mha_case(attn, tmp_path, m, 4, q, k, v)
        assert rel_error(o, want) < REL and rel_error(w, want_w) < REL, bias


def test_mha_causal(attn, tmp_path):
    rng = np.random.default_rng(3)
    o, want, w, want_w = run_mha_case(attn, tmp_path, make_mha(8, 2), 2, rand(rng, 2, 6, 8),
                                      causal=True)
    assert rel_error(o, want) < REL and rel_error(w, want_w) < REL
    assert np.all(np.triu(w[0, 0], 1) == 0)


def test_mha_key_padding_bool_and_float(attn, tmp_path):
    rng = np.random.default_rng(4)
    q, kv = rand(rng, 2, 3, 8), rand(rng, 2, 5, 8)
    kpm = np.zeros((2, 5), bool)
    kpm[0, 3:] = True
    kpm[1, 0] = True
    o, want, w, want_w = run_mha_case(attn, tmp_path, make_mha(8, 2), 2, q, kv, kv, kpm=kpm)
    assert rel_error(o, want) < REL and rel_error(w, want_w) < REL
    assert np.all(w[0, :, :, 3:] == 0)
    float_kpm = rand(rng, 2, 5)
    o, want, w, want_w = run_mha_case(attn, tmp_path, make_mha(8, 2), 2, q, kv, kv, kpm=float_kpm)
    assert rel_error(o, want) < REL and rel_error(w, want_w) < REL


def test_mha_attn_mask_2d_and_3d(attn, tmp_path):
    rng = np.random.default_rng(5)
    b, l, s, h = 2, 4, 6, 2
    q, kv = rand(rng, b, l, 8), rand(rng, b, s, 8)
    mask2 = rng.random((l, s)) < 0.3
    mask2[:, 0] = False  # no fully masked row: PyTorch gives NaN there, attn gives 0
    mask3 = rng.random((b * h, l, s)) < 0.3
    mask3[:, :, 1] = False
    for mask in (mask2, mask3, rand(rng, l, s), rand(rng, b * h, l, s)):
        o, want, w, want_w = run_mha_case(attn, tmp_path, make_mha(8, h), h, q, kv, kv, mask=mask)
        assert rel_error(o, want) < REL and rel_error(w, want_w) < REL, mask.shape


def test_mha_masks_combined_with_causal(attn, tmp_path):
    rng = np.random.default_rng(6)
    q = rand(rng, 2, 5, 8)
    kpm = np.zeros((2, 5), bool)
    kpm[1, 4] = True
    o, want, w, want_w = run_mha_case(attn, tmp_path, make_mha(8, 2), 2, q, causal=True, kpm=kpm)
    assert rel_error(o, want) < REL and rel_error(w, want_w) < REL


def test_mha_unbatched(attn, tmp_path):
    rng = np.random.default_rng(7)
    o, want, w, want_w = run_mha_case(attn, tmp_path, make_mha(8, 2), 2, rand(rng, 5, 8))
    assert o.shape == (5, 8) and w.shape == (2, 5, 5)
    assert rel_error(o, want) < REL and rel_error(w, want_w) < REL


def test_mha_fully_masked_row_is_zero_weights(attn, tmp_path):
    """PyTorch gives NaN for a query whose keys are all masked; attn gives 0 weights there, and
    the output of that row is then just the output projection's bias."""
    rng = np.random.default_rng(8)
    q = rand(rng, 1, 3, 8)
    mask = np.zeros((3, 3), bool)
    mask[1, :] = True
    m = make_mha(8, 2)
    o, want, w, _ = run_mha_case(attn, tmp_path, m, 2, q, mask=mask)
    assert np.all(w[0, :, 1, :] == 0)
    np.testing.assert_allclose(o[0, 1], m.out_proj.bias.detach().numpy(), rtol=1e-6)
    keep = [0, 2]
    assert rel_error(o[0, keep], want[0, keep]) < REL


# ---- sdpa ----

def torch_sdpa(q, k, v, mask=None, causal=False, scale=None):
    """The math of torch.nn.functional.scaled_dot_product_attention, in float64 (Debian's torch
    1.13 predates the function itself)."""
    q, k, v = (torch.from_numpy(x).double() for x in (q, k, v))
    h, hkv = q.shape[1], k.shape[1]
    k = k.repeat_interleave(h // hkv, dim=1)  # enable_gqa=True
    v = v.repeat_interleave(h // hkv, dim=1)
    scale = 1 / np.sqrt(q.shape[-1]) if scale is None else scale
    s = q @ k.transpose(-2, -1) * scale
    L, S = s.shape[-2:]
    if causal:
        s = s.masked_fill(~torch.ones(L, S, dtype=torch.bool).tril(), float("-inf"))
    if mask is not None:
        m = torch.from_numpy(mask)
        s = s.masked_fill(~m, float("-inf")) if m.dtype == torch.bool else s + m.double()
    return (torch.softmax(s, dim=-1) @ v).numpy()


SDPA_SHAPES = [  # B, H, Hkv, L, S, D
    (1, 1, 1, 1, 1, 8), (2, 4, 4, 7, 7, 16), (1, 4, 2, 5, 9, 8), (2, 6, 1, 9, 4, 32),
    (1, 2, 2, 65, 63, 59),
]


@pytest.mark.parametrize("b,h,hkv,l,s,d", SDPA_SHAPES)
@pytest.mark.parametrize("causal", [False, True])
def test_sdpa_matches_torch(attn, tmp_path, b, h, hkv, l, s, d, causal):
    if causal and l > s:
        l = s  # rows past S would see nothing new; covered by the L ≠ S cases below
    rng = np.random.default_rng(l * 31 + s)
    q, k, v = rand(rng, b, h, l, d), rand(rng, b, hkv, s, d), rand(rng, b, hkv, s, d)
    args = ["sdpa", "--query", save(tmp_path / "q.npy", q), "--key", save(tmp_path / "k.npy", k),
            "--value", save(tmp_path / "v.npy", v), "-o", tmp_path / "o.npy"]
    r = attn(*args, *(["--causal"] if causal else []))
    assert r.code == 0, r.err
    assert rel_error(np.load(tmp_path / "o.npy"), torch_sdpa(q, k, v, causal=causal)) < REL


def test_sdpa_causal_top_left_with_l_less_than_s(attn, tmp_path):
    rng = np.random.default_rng(9)
    q, k, v = rand(rng, 1, 2, 3, 8), rand(rng, 1, 2, 7, 8), rand(rng, 1, 2, 7, 8)
    r = attn("sdpa", "--query", save(tmp_path / "q.npy", q), "--key", save(tmp_path / "k.npy", k),
             "--value", save(tmp_path / "v.npy", v), "--causal", "-o", tmp_path / "o.npy")
    assert r.code == 0, r.err
    assert rel_error(np.load(tmp_path / "o.npy"), torch_sdpa(q, k, v, causal=True)) < REL


def test_sdpa_masks_and_scale(attn, tmp_path):
    rng = np.random.default_rng(10)
    b, h, l, s, d = 2, 2, 5, 6, 8
    q, k, v = rand(rng, b, h, l, d), rand(rng, b, h, s, d), rand(rng, b, h, s, d)
    bool_mask = rng.random((l, s)) < 0.7
    bool_mask[:, 2] = True  # every row keeps a key
    masks = [rand(rng, l, s), rand(rng, b, 1, l, s), rand(rng, b, h, l, s), bool_mask,
             np.broadcast_to(bool_mask, (b, h, l, s)).copy()]
    for i, mask in enumerate(masks):
        for scale in (None, 0.3):
            args = ["sdpa", "--query", save(tmp_path / "q.npy", q), "--key",
                    save(tmp_path / "k.npy", k), "--value", save(tmp_path / "v.npy", v),
                    "--attn-mask", save(tmp_path / "m.npy", mask), "-o", tmp_path / "o.npy"]
            if scale is not None:
                args += ["--scale", scale]
            r = attn(*args)
            assert r.code == 0, r.err
            want = torch_sdpa(q, k, v, mask=mask, scale=scale)
            assert rel_error(np.load(tmp_path / "o.npy"), want) < REL, (i, scale)


def test_sdpa_fully_masked_row_is_zero(attn, tmp_path):
    rng = np.random.default_rng(11)
    q, k, v = rand(rng, 1, 1, 3, 4), rand(rng, 1, 1, 3, 4), rand(rng, 1, 1, 3, 4)
    mask = np.ones((3, 3), bool)
    mask[1] = False
    r = attn("sdpa", "--query", save(tmp_path / "q.npy", q), "--key", save(tmp_path / "k.npy", k),
             "--value", save(tmp_path / "v.npy", v), "--attn-mask", save(tmp_path / "m.npy", mask),
             "-o", tmp_path / "o.npy")
    assert r.code == 0, r.err
    o = np.load(tmp_path / "o.npy")
    assert np.all(o[0, 0, 1] == 0)
    want = torch_sdpa(q, k, v, mask=mask)
    assert rel_error(o[0, 0, [0, 2]], want[0, 0, [0, 2]]) < REL
