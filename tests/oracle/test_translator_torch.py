"""attn's translator (src/models/translator: a pre-norm Transformer encoder-decoder over one joint
vocabulary, tied embeddings, Vaswani's sinusoids, label smoothing) against PyTorch's
nn.Transformer(norm_first=True, ReLU, no dropout) holding the same weights, in float64: the loss
and the gradient of every parameter, with sentences of unequal lengths on both sides
(src_key_padding_mask, memory_key_padding_mask) and the causal target mask. attn runs in float32
through tests/oracle/translator_npy.cpp (the attn_translator_npy target), which reads and writes
.npy files."""
import math
import os
import subprocess

import numpy as np
import pytest

from conftest import ATTN

torch = pytest.importorskip("torch")

TOOL = os.environ.get("ATTN_TRANSLATOR_NPY") or os.path.join(os.path.dirname(ATTN), "attn_translator_npy")

# (vocabulary, width, heads, encoder layers, decoder layers, feedforward, smoothing)
# (the batch below uses ids up to 11)
CASES = [(13, 8, 2, 2, 2, 12, 0.1), (17, 12, 3, 1, 3, 16, 0.0), (12, 6, 1, 3, 1, 10, 0.2)]


def attention_names(prefix):
    return [prefix + n for n in ("q_proj_weight", "q_proj_bias", "k_proj_weight", "k_proj_bias", "v_proj_weight",
                                 "v_proj_bias", "out_proj.weight", "out_proj.bias")]


def parameter_shapes(v, e, enc, dec, f):
    """attn's parameter names and shapes (models/translator.cpp's order)."""
    shapes = {"embedding.weight": (v, e)}
    attention = {"q_proj_weight": (e, e), "q_proj_bias": (e,), "k_proj_weight": (e, e), "k_proj_bias": (e,),
                 "v_proj_weight": (e, e), "v_proj_bias": (e,), "out_proj.weight": (e, e), "out_proj.bias": (e,)}
    block = {"linear1.weight": (f, e), "linear1.bias": (f,), "linear2.weight": (e, f), "linear2.bias": (e,)}
    for i in range(enc):
        p = f"encoder.layers.{i}."
        shapes.update({p + "attention." + k: s for k, s in attention.items()})
        shapes.update({p + k: s for k, s in block.items()})
        shapes.update({p + f"norm{n}.{w}": (e,) for n in (1, 2) for w in ("weight", "bias")})
    shapes.update({"encoder.norm.weight": (e,), "encoder.norm.bias": (e,)})
    for i in range(dec):
        p = f"decoder.layers.{i}."
        for kind in ("self_attn.", "multihead_attn."):
            shapes.update({p + kind + k: s for k, s in attention.items()})
        shapes.update({p + k: s for k, s in block.items()})
        shapes.update({p + f"norm{n}.{w}": (e,) for n in (1, 2, 3) for w in ("weight", "bias")})
    shapes.update({"decoder.norm.weight": (e,), "decoder.norm.bias": (e,)})
    return shapes


def batch():
    """Three pairs: sources of 6, 2 and 4 pieces, targets of 4, 1 and 3 (+ </s>); −1 pads."""
    source = np.array([[4, 5, 6, 7, 8, 3], [9, 3, -1, -1, -1, -1], [5, 5, 10, 3, -1, -1]])
    target_in = np.array([[2, 4, 9, 10, 11], [2, 6, -1, -1, -1], [2, 7, 7, 4, -1]])
    target_out = np.array([[4, 9, 10, 11, 3], [6, 3, -1, -1, -1], [7, 7, 4, 3, -1]])
    return source, np.array([6, 2, 4]), target_in, target_out


def sinusoids(length, e):
    pe = np.zeros((length, e))
    for t in range(length):
        for j in range(e):
            angle = t / 10000 ** ((j - j % 2) / e)
            pe[t, j] = math.sin(angle) if j % 2 == 0 else math.cos(angle)
    return torch.tensor(pe)


def torch_translator(weights, v, e, heads, enc, dec, f, smoothing):
    """nn.Transformer with attn's weights, float64: the loss and every weight's gradient, by attn's names."""
    model = torch.nn.Transformer(d_model=e, nhead=heads, num_encoder_layers=enc, num_decoder_layers=dec,
                                 dim_feedforward=f, dropout=0.0, norm_first=True, batch_first=True).double()
    model.train()  # (no inference fast path)
    t = {k: torch.tensor(a, dtype=torch.float64) for k, a in weights.items()}
    links = {}  # attn name -> (torch parameter, row slice or None)
    with torch.no_grad():
        def attention(attn_prefix, module):
            module.in_proj_weight.copy_(torch.cat([t[attn_prefix + w] for w in ("q_proj_weight", "k_proj_weight",
                                                                               "v_proj_weight")]))
            module.in_proj_bias.copy_(torch.cat([t[attn_prefix + w] for w in ("q_proj_bias", "k_proj_bias",
                                                                             "v_proj_bias")]))
            module.out_proj.weight.copy_(t[attn_prefix + "out_proj.weight"])
            module.out_proj.bias.copy_(t[attn_prefix + "out_proj.bias"])
            for k, part in (("q", 0), ("k", 1), ("v", 2)):
                links[attn_prefix + f"{k}_proj_weight"] = (module.in_proj_weight, slice(part * e, (part + 1) * e))
                links[attn_prefix + f"{k}_proj_bias"] = (module.in_proj_bias, slice(part * e, (part + 1) * e))
            links[attn_prefix + "out_proj.weight"] = (module.out_proj.weight, None)
            links[attn_prefix + "out_proj.bias"] = (module.out_proj.bias, None)

        def plain(attn_name, param):
            param.copy_(t[attn_name])
            links[attn_name] = (param, None)

        for i, layer in enumerate(model.encoder.layers):
            p = f"encoder.layers.{i}."
            attention(p + "attention.", layer.self_attn)
            for name in ("linear1", "linear2", "norm1", "norm2"):
                for w in ("weight", "bias"):
                    plain(p + f"{name}.{w}", getattr(getattr(layer, name), w))
        for i, layer in enumerate(model.decoder.layers):
            p = f"decoder.layers.{i}."
            attention(p + "self_attn.", layer.self_attn)
            attention(p + "multihead_attn.", layer.multihead_attn)
            for name in ("linear1", "linear2", "norm1", "norm2", "norm3"):
                for w in ("weight", "bias"):
                    plain(p + f"{name}.{w}", getattr(getattr(layer, name), w))
        for side in ("encoder", "decoder"):
            for w in ("weight", "bias"):
                plain(f"{side}.norm.{w}", getattr(getattr(model, side).norm, w))
    embedding = t["embedding.weight"].clone().requires_grad_(True)
    source, lengths, target_in, target_out = (torch.tensor(a) for a in batch())

    def embed(ids):
        rows = embedding[ids.clamp(min=0)] * (ids >= 0).unsqueeze(-1)  # padding: a zero row, as attn's
        return rows * math.sqrt(e) + sinusoids(ids.shape[1], e)

    source_padding = torch.arange(source.shape[1])[None, :] >= lengths[:, None]
    causal = torch.triu(torch.full((target_in.shape[1], target_in.shape[1]), float("-inf"), dtype=torch.float64), 1)
    y = model(embed(source), embed(target_in), tgt_mask=causal, src_key_padding_mask=source_padding,
              memory_key_padding_mask=source_padding)
    real = target_out >= 0
    logits = y[real] @ embedding.T
    loss = torch.nn.functional.cross_entropy(logits, target_out[real], label_smoothing=smoothing)
    loss.backward()
    grads = {"embedding.weight": embedding.grad.numpy()}
    for name, (param, rows) in links.items():
        g = param.grad if rows is None else param.grad[rows]
        grads[name] = g.numpy()
    return loss.item(), grads


@pytest.mark.parametrize("case", CASES, ids=lambda c: "v{}e{}h{}enc{}dec{}f{}s{}".format(*c))
def test_translator_matches_nn_transformer(case, tmp_path):
    v, e, heads, enc, dec, f, smoothing = case
    rng = np.random.default_rng(sum(case[:6]))
    weights = {}
    for name, shape in parameter_shapes(v, e, enc, dec, f).items():
        base = 1.0 if "norm" in name and name.endswith("weight") else 0.0
        weights[name] = (base + rng.standard_normal(shape) * 0.4).astype(np.float32)
        np.save(tmp_path / f"{name}.npy", weights[name])
    for name, a in zip(("source", "source_lengths", "target_in", "target_out"), batch()):
        np.save(tmp_path / f"{name}.npy", a.astype(np.float32))
    r = subprocess.run([TOOL, str(tmp_path), *map(str, case)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    want_loss, want = torch_translator(weights, v, e, heads, enc, dec, f, smoothing)
    got_loss = float(np.load(tmp_path / "loss.npy")[0])
    assert abs(got_loss - want_loss) <= 1e-5 * want_loss, (got_loss, want_loss)
    everything = math.sqrt(sum(float(np.sum(g ** 2)) for g in want.values()))
    for name, g in want.items():
        got = np.load(tmp_path / f"grad.{name}.npy").astype(np.float64)
        assert got.shape == g.shape, name
        # relative L2 error, against the larger of the gradient's own norm and 1e-3 of all of
        # them (the key bias's true gradient is 0: rounding noise in both)
        error = np.linalg.norm(got - g) / max(np.linalg.norm(g), 1e-3 * everything)
        assert error < 1e-4, f"{name}: relative error {error}"
