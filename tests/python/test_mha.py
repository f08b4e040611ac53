"""attn.MultiheadAttention against torch.nn.MultiheadAttention(batch_first=True), in float64."""
import numpy as np
import pytest

attn = pytest.importorskip("attn")
torch = pytest.importorskip("torch")

from conftest import write_safetensors
from torch_reference import REL, make_mha, mha as reference, rel_error


def rand(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def load(tmp_path, m):
    path = tmp_path / "mha.safetensors"
    write_safetensors(path, {n: t.detach().numpy() for n, t in m.state_dict().items()})
    return attn.MultiheadAttention.from_safetensors(path, m.num_heads)


@pytest.mark.parametrize("b,l,e,h", [(1, 1, 4, 1), (2, 5, 8, 2), (3, 7, 12, 4), (2, 13, 16, 8)])
def test_self_attention(tmp_path, b, l, e, h):
    rng = np.random.default_rng(b * 100 + l)
    m = make_mha(e, h)
    layer = load(tmp_path, m)
    assert (layer.embed_dim, layer.num_heads, layer.head_dim, layer.bias) == (e, h, e // h, True)
    x = rand(rng, b, l, e)
    want, want_w = reference(m, x)
    out = layer(x)
    assert isinstance(out, np.ndarray) and out.shape == (b, l, e)
    assert rel_error(out, want) < REL
    out2, w = layer(x, need_weights=True)  # averaged over heads, as PyTorch
    np.testing.assert_array_equal(out2, out)
    assert w.shape == (b, l, l) and rel_error(w, want_w) < REL


def test_cross_attention_kdim_vdim_and_no_bias(tmp_path):
    rng = np.random.default_rng(2)
    q, k, v = rand(rng, 2, 4, 8), rand(rng, 2, 5, 3), rand(rng, 2, 5, 7)
    for bias in (True, False):
        m = make_mha(8, 4, bias=bias, kdim=3, vdim=7, seed=int(bias))
        layer = load(tmp_path, m)
        assert (layer.kdim, layer.vdim, layer.bias) == (3, 7, bias)
        want, want_w = reference(m, q, k, v, average_attn_weights=False)
        out, w = layer(q, k, v, need_weights=True, average_attn_weights=False)
        assert w.shape == (2, 4, 4, 5)
        assert rel_error(out, want) < REL and rel_error(w, want_w) < REL, bias


def test_masks_and_causal(tmp_path):
    rng = np.random.default_rng(5)
    b, l, s, h = 2, 4, 6, 2
    m = make_mha(8, h)
    layer = load(tmp_path, m)
    q, kv = rand(rng, b, l, 8), rand(rng, b, s, 8)
    kpm = np.zeros((b, s), bool)
    kpm[0, 4:] = True
    mask3 = rng.random((b * h, l, s)) < 0.3
    mask3[:, :, 1] = False  # no fully masked row: PyTorch 1.13 gives NaN there
    for kwargs in ({"key_padding_mask": kpm}, {"key_padding_mask": rand(rng, b, s)},
                   {"attn_mask": mask3}, {"attn_mask": rand(rng, l, s)},
                   {"attn_mask": mask3, "key_padding_mask": kpm}):
        want, want_w = reference(m, q, kv, kv, **kwargs)
        out, w = layer(q, kv, kv, need_weights=True, **kwargs)
        assert rel_error(out, want) < REL and rel_error(w, want_w) < REL, kwargs
    # PyTorch 1.13's forward has no is_causal: the causal mask is given explicitly there.
    x = rand(rng, b, 5, 8)
    want, _ = reference(m, x, attn_mask=np.triu(np.ones((5, 5), bool), 1))
    assert rel_error(layer(x, causal=True), want) < REL


def test_unbatched(tmp_path):
    rng = np.random.default_rng(6)
    m = make_mha(8, 2)
    layer = load(tmp_path, m)
    x, kv = rand(rng, 5, 8), rand(rng, 3, 8)
    kpm = np.array([False, True, False])
    want, want_w = reference(m, x, kv, kv, key_padding_mask=kpm, average_attn_weights=False)
    out, w = layer(x, kv, kv, key_padding_mask=kpm, need_weights=True, average_attn_weights=False)
    assert out.shape == (5, 8) and w.shape == (2, 5, 3)
    assert rel_error(out, want) < REL and rel_error(w, want_w) < REL


def test_value_defaults_to_key_and_from_state_dict(tmp_path):
    rng = np.random.default_rng(7)
    m = make_mha(8, 2)
    q, kv = rand(rng, 1, 3, 8), rand(rng, 1, 4, 8)
    layer = attn.MultiheadAttention.from_state_dict(
        {n: t.detach().numpy() for n, t in m.state_dict().items()}, 2)
    want, _ = reference(m, q, kv, kv)
    assert rel_error(layer(q, kv), want) < REL
    np.testing.assert_array_equal(layer(q, kv), load(tmp_path, m)(q, kv, kv))
    assert "embed_dim=8" in repr(layer)


def test_errors(tmp_path):
    m = make_mha(8, 2)
    state = {n: t.detach().numpy() for n, t in m.state_dict().items()}
    del state["out_proj.weight"]
    path = tmp_path / "broken.safetensors"
    write_safetensors(path, state)
    with pytest.raises(attn.InputError) as e:
        attn.MultiheadAttention.from_safetensors(path, 2)
    assert e.value.file == str(path) and "out_proj.weight" in str(e.value)
    assert isinstance(e.value, attn.Error) and isinstance(e.value, ValueError)
    with pytest.raises(attn.InputError, match="cannot open"):
        attn.MultiheadAttention.from_safetensors(tmp_path / "missing.safetensors", 2)
    layer = load(tmp_path, m)
    with pytest.raises(attn.UsageError, match="query"):
        layer(np.zeros((1, 3, 6), np.float32))
    with pytest.raises(TypeError, match="float32"):
        layer(np.zeros((1, 3, 8)))
    with pytest.raises(attn.UsageError):
        load(tmp_path, make_mha(8, 2)).__class__.from_safetensors(tmp_path / "mha.safetensors", 3)


def test_dtype_and_device():
    """dtype bf16 runs the attention's products on bf16 operands (close to float32); device='cuda'
    runs the layer on attn's CUDA kernels where built and a GPU answers, else one UsageError
    naming what is missing (tests/unit/test_cuda.cpp checks the GPU's results there)."""
    rng = np.random.default_rng(4)
    e, h = 16, 2
    state = {"in_proj_weight": rand(rng, 3 * e, e) * 0.3, "in_proj_bias": rand(rng, 3 * e),
             "out_proj.weight": rand(rng, e, e) * 0.3, "out_proj.bias": rand(rng, e)}
    layer = attn.MultiheadAttention.from_state_dict(state, h)
    x = rand(rng, 2, 9, e)
    full = layer(x)
    assert np.abs(layer(x, dtype="bf16") - full).max() < 2e-2
    assert np.array_equal(layer(x, device="cpu"), full)
    try:
        out = layer(x, device="cuda", dtype="bf16")
    except attn.UsageError as err:
        assert "-DATTN_CUDA=ON" in str(err) or "no CUDA device" in str(err)
    else:
        assert np.abs(out - full).max() < 3e-2
    with pytest.raises(attn.UsageError, match="expected cpu or cuda"):
        layer(x, device="tpu")
    with pytest.raises(attn.UsageError, match="need_weights"):
        layer(x, device="cuda", need_weights=True)
    with pytest.raises(attn.UsageError):
        layer(x, dtype="float8")
