"""A trained model's file read back by PyTorch: the weights and metadata of `attn train` mean
what PyTorch means by them. The model is rebuilt from the safetensors file alone (F.conv1d for
the word window, F.linear for the projections, nn.MultiheadAttention's head split and 1/√D scale, causal for next-word, mean,
ReLU MLP) and its softmax compared with the probabilities `attn predict` prints (4 decimals,
so within 6e-5 including float32 rounding), and its attention block's output y = out_proj(
attention) with the contextual embeddings `attn embed --model` prints."""
import json
import os
import struct
import subprocess
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from conftest import ATTN

torch = pytest.importorskip("torch")
F = torch.nn.functional

TOY = os.path.join(os.path.dirname(__file__), "..", "data", "seed003_toy.txt")
NEGATION = os.path.join(os.path.dirname(__file__), "..", "data", "negation_train.tsv")


def read_safetensors(path):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        data = f.read()
    meta = header.pop("__metadata__")
    tensors = {}
    for name, info in header.items():
        begin, end = info["data_offsets"]
        array = np.frombuffer(data[begin:end], dtype="<f4").reshape(info["shape"])
        tensors[name] = torch.from_numpy(array.astype(np.float64))
    return tensors, meta


def torch_word_window(t, config, x, causal):
    """attn's word window as PyTorch's conv1d over x [L, Ein]: the file's weight [out, width·in]
    holds conv1d's [out, in, width] window position by window position; zero padding, centred
    (width // 2 before) or causal (width − 1 before, none after)."""
    width = config.get("window", 0)
    if width == 0:
        return x
    weight = t["window.weight"].reshape(-1, width, x.shape[1]).permute(0, 2, 1)
    before = width - 1 if causal else width // 2
    padded = F.pad(x.T.unsqueeze(0), (before, width - 1 - before))
    return F.relu(F.conv1d(padded, weight, t["window.bias"]))[0].T


def torch_attention(t, config, ids, causal):
    """The attention block rebuilt from the model file: (weights [H, L, L], y [L, E]), y being
    out_proj of the heads' outputs, the contextual embeddings the MLP head pools."""
    x = t["embedding.weight"][ids]
    if config["max_positions"] > 0:
        x = x + t["position.weight"][: len(ids)]
    x = torch_word_window(t, config, x, causal)
    heads, e = config["heads"], config["dim"]
    d = e // heads

    def project(name):  # [L, E] → [H, L, D]
        y = F.linear(x, t[f"attention.{name}_proj_weight"], t[f"attention.{name}_proj_bias"])
        return y.reshape(len(ids), heads, d).transpose(0, 1)

    q, k, v = project("q"), project("k"), project("v")
    scores = q @ k.transpose(1, 2) / d ** 0.5
    if causal:
        scores = scores.masked_fill(torch.ones(len(ids), len(ids)).triu(1).bool(), float("-inf"))
    weights = scores.softmax(-1)  # [H, L, L]
    o = (weights @ v).transpose(0, 1).reshape(len(ids), e)
    return weights, F.linear(o, t["attention.out_proj.weight"], t["attention.out_proj.bias"])


def torch_probabilities(t, config, ids, causal, return_weights=False):
    weights, y = torch_attention(t, config, ids, causal)
    if return_weights:
        return weights
    hidden = F.relu(F.linear(y.mean(0), t["head.0.weight"], t["head.0.bias"]))
    return F.linear(hidden, t["head.2.weight"], t["head.2.bias"]).softmax(-1)


@pytest.fixture(scope="module")
def next_word_model(tmp_path_factory):
    """A small next-word model (3 heads, learned embeddings and positions, a causal word window
    of 2) and its file read back: (path, tensors, config, input words, outputs)."""
    model = tmp_path_factory.mktemp("oracle") / "m.safetensors"
    r = subprocess.run([ATTN, "train", "--task", "next-word", "--data", TOY, "--learn-embeddings",
                        "12", "--heads", "3", "--dim", "9", "--hidden", "7", "--positions",
                        "--pool", "mean", "--window", "2", "--epochs", "30", "-o", str(model)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    t, meta = read_safetensors(model)
    return (model, t, json.loads(meta["config"]), json.loads(meta["input_words"]),
            json.loads(meta["outputs"]))


def test_next_word_model_file_means_what_pytorch_means(attn, next_word_model):
    model, t, config, words, outputs = next_word_model
    for text in ["not like", "do hate", "not"]:
        want = torch_probabilities(t, config, [words.index(w) for w in text.split()], causal=True)
        r = attn("predict", "--model", model, "--top", str(len(outputs)), text)
        assert r.code == 0, r.err
        got = {w: float(p) for w, p in (line.split() for line in r.out.splitlines()[1:])}
        for i, word in enumerate(outputs):
            assert abs(got[word] - want[i].item()) < 6e-5, (text, word, got, want)


def test_heatmap_of_a_model_shows_the_attention_pytorch_computes(attn, next_word_model, tmp_path):
    # Every cell's <title> holds attn's float32 weight; PyTorch recomputes each head's softmax
    # from the model file in float64. An unknown word is left out of the tokens.
    model, t, config, words, _ = next_word_model
    out = tmp_path / "m.svg"
    r = attn("heatmap", "--model", model, "not zzqxv like hate", "-o", out)
    assert r.code == 0, r.err
    want = torch_probabilities(
        t, config, [words.index(w) for w in ["not", "like", "hate"]], causal=True,
        return_weights=True)
    svg = "{http://www.w3.org/2000/svg}"
    cells = [e for e in ET.parse(out).getroot().iter(svg + "rect")
             if e.attrib.get("class") == "cell"]
    assert len(cells) == 3 * 3 * 3
    for cell in cells:
        h, i, j = (int(cell.attrib[f"data-{a}"]) for a in ("head", "row", "col"))
        got = float(cell.find(svg + "title").text.rsplit(": ", 1)[1])
        assert abs(got - want[h, i, j].item()) < 1e-5, (h, i, j, got, want[h, i, j].item())


def torch_encoder_layer(t, config, i, norm_first):
    """Encoder layer i of the file as PyTorch's own nn.TransformerEncoderLayer (ReLU, eval mode:
    no dropout)."""
    layer = torch.nn.TransformerEncoderLayer(config["dim"], config["heads"], dim_feedforward=config["feedforward"],
                                             dropout=0.0, batch_first=True, norm_first=norm_first).double().eval()
    p = f"layers.{i}."
    a = p + "attention."
    with torch.no_grad():
        layer.self_attn.in_proj_weight.copy_(torch.cat(
            [t[a + "q_proj_weight"], t[a + "k_proj_weight"], t[a + "v_proj_weight"]]))
        layer.self_attn.in_proj_bias.copy_(torch.cat(
            [t[a + "q_proj_bias"], t[a + "k_proj_bias"], t[a + "v_proj_bias"]]))
        layer.self_attn.out_proj.weight.copy_(t[a + "out_proj.weight"])
        layer.self_attn.out_proj.bias.copy_(t[a + "out_proj.bias"])
        for name in ["norm1", "norm2", "linear1", "linear2"]:
            getattr(layer, name).weight.copy_(t[p + name + ".weight"])
            getattr(layer, name).bias.copy_(t[p + name + ".bias"])
    return layer


def torch_encoder_probabilities(t, config, ids):
    """The classifier with encoder layers, rebuilt from the file with PyTorch's own
    nn.TransformerEncoderLayer (post-norm, or pre-norm with norm_first=True followed by the final
    LayerNorm, as nn.TransformerEncoder(norm=…) applies it; ReLU, eval mode: no dropout), the
    pooling and the head."""
    table = torch.cat([t["embedding.weight"], t["embedding.new_words"]])
    x = torch_word_window(t, config, table[ids], causal=False).unsqueeze(0)  # [1, L, E]
    e = config["dim"]
    for i in range(config["layers"]):
        with torch.no_grad():
            x = torch_encoder_layer(t, config, i, config.get("norm_first", False))(x)
    if config.get("norm_first", False):
        x = F.layer_norm(x, (e,), t["final_norm.weight"], t["final_norm.bias"])
    y = x[0]
    pooled = {"mean": y.mean(0), "max": y.max(0).values,
              "mean+max": torch.cat([y.mean(0), y.max(0).values])}[config["pool"]]
    hidden = F.relu(F.linear(pooled, t["head.0.weight"], t["head.0.bias"]))
    return F.linear(hidden, t["head.2.weight"], t["head.2.bias"]).softmax(-1)


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_layers_and_new_words_mean_what_pytorch_means(attn, tmp_path, norm_first):
    # Small pre-trained vectors that lack "n't": the model learns a row for it; two encoder
    # layers, mean+max pooling, dropout while training.
    rng = np.random.default_rng(0)
    words = ["the", "movie", "film", "was", "is", "good", "bad", "great", "awful", "plot"]
    vectors = tmp_path / "small.txt"
    vectors.write_text("".join(w + " " + " ".join(f"{v:.4f}" for v in rng.normal(size=8)) + "\n"
                               for w in words))
    data = tmp_path / "train.tsv"
    lines = []
    for noun in ["movie", "film", "plot"]:
        for verb in ["was", "is"]:
            for adj, good in [("good", 1), ("bad", 0), ("great", 1), ("awful", 0)]:
                for neg in [0, 1]:
                    label = "pos" if good != neg else "neg"
                    clitic = "n't" if neg else ""
                    lines.append(f"{label}\tthe {noun} {verb}{clitic} {adj}\n")
    data.write_text("".join(lines))
    model = tmp_path / "m.safetensors"
    r = attn("train", "--task", "classify", "--data", data, "--vectors", vectors, "--layers", "2",
             "--heads", "2", "--feedforward", "12", "--hidden", "6", "--pool", "mean+max",
             "--dropout", "0.1", "--epochs", "5", *(["--norm-first"] if norm_first else []), "-o", model)
    assert r.code == 0, r.err
    t, meta = read_safetensors(model)
    config = json.loads(meta["config"])
    assert config["layers"] == 2 and config["pool"] == "mean+max"
    assert config["norm_first"] == norm_first and ("final_norm.weight" in t) == norm_first
    vocab = json.loads(meta["input_words"]) + json.loads(meta["new_words"])
    assert "n't" in json.loads(meta["new_words"])
    outputs = json.loads(meta["outputs"])
    for text in ["the movie wasn't good", "the plot is awful", "the film isn't great"]:
        tokens = text.replace("n't", " n't").split()
        want = torch_encoder_probabilities(t, config, [vocab.index(w) for w in tokens])
        r = attn("predict", "--model", model, "--top", str(len(outputs)), text)
        assert r.code == 0, r.err
        got = {w: float(p) for w, p in (line.split() for line in r.out.splitlines()[1:])}
        for i, label in enumerate(outputs):
            assert abs(got[label] - want[i].item()) < 6e-5, (text, label, got, want)


@pytest.fixture(scope="module")
def classify_model(tmp_path_factory):
    """A small classifier (2 heads, learned embeddings, no positions) trained on the negation
    data: (path, tensors, config, input words)."""
    model = tmp_path_factory.mktemp("oracle") / "c.safetensors"
    r = subprocess.run([ATTN, "train", "--task", "classify", "--data", NEGATION,
                        "--learn-embeddings", "16", "--heads", "2", "--dim", "10", "--hidden", "6",
                        "--epochs", "2", "--seed", "1", "-o", str(model)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    t, meta = read_safetensors(model)
    return model, t, json.loads(meta["config"]), json.loads(meta["input_words"])


# attn's float32 forward rounds through ~5 steps (projections, scores, softmax, weighted sum,
# out_proj), each a sum of at most 16 terms: with unit roundoff 6e-8 its relative error is near
# 1e-6, and the JSON holds each float32 exactly. 1e-5 leaves a 10× margin; a wrong mask, scale,
# bias or layer gives errors of order 1.
EMBED_RTOL = 1e-5


@pytest.mark.parametrize("kind,text", [
    ("classify", "the movie was not good"),
    ("classify", "that zzqxv book seemed never dull"),
    ("next-word", "not like hate"),
    ("next-word", "do zzqxv hate like not"),
])
def test_embed_model_prints_the_attention_blocks_output(attn, next_word_model, classify_model,
                                                        kind, text):
    model, t, config, words = (classify_model if kind == "classify" else next_word_model)[:4]
    r = attn("embed", "--model", model, "--format", "json", text)
    assert r.code == 0, r.err
    got = json.loads(r.out)
    known = [w for w in text.split() if w in words]
    if config["max_positions"] > 0:  # learned positions reach that far: the last tokens stay
        known = known[-config["max_positions"]:]
    assert got["tokens"] == known and got["unknown"] == [w for w in text.split() if w not in words]
    _, want = torch_attention(t, config, [words.index(w) for w in known], causal=kind == "next-word")
    got_y = torch.tensor(got["embeddings"], dtype=torch.float64)
    assert got_y.shape == want.shape == (len(known), config["dim"])
    error = ((got_y - want).norm() / want.norm()).item()
    worst = (got_y - want).abs().max().item()
    assert error < EMBED_RTOL and worst < EMBED_RTOL * want.abs().max().item(), (
        f"{kind} '{text}': relative L2 error {error:.3g}, max |diff| {worst:.3g}; "
        f"first values attn {got_y.flatten()[:4].tolist()} torch {want.flatten()[:4].tolist()}")


def torch_lm_logits(t, config, ids):
    """A language model (--task lm) rebuilt from its file with PyTorch's own pre-norm
    nn.TransformerEncoderLayer under a causal mask: embedding rows + learned positions, the
    layers, the final LayerNorm, the output transform, then every row scored against the
    embedding table itself (tied) plus the output bias (an adaptive softmax: each word's
    log-probability). ids [L] → logits [L, V]."""
    table = t["embedding.weight"]
    x = (table[ids] + t["position.weight"][: len(ids)]).unsqueeze(0)
    e = config["dim"]
    mask = torch.triu(torch.full((len(ids), len(ids)), float("-inf"), dtype=torch.float64), 1)
    for i in range(config["layers"]):
        with torch.no_grad():
            x = torch_encoder_layer(t, config, i, norm_first=True)(x, src_mask=mask)
    y = F.layer_norm(x[0], (e,), t["final_norm.weight"], t["final_norm.bias"])
    hidden = F.linear(y, t["output.transform.weight"], t["output.transform.bias"])
    scores = hidden @ table.T + t["output.bias"]
    if "adaptive_cutoffs" not in config:
        return scores
    # the adaptive softmax: log-probabilities, which cross_entropy and softmax read as logits
    tokens = F.linear(hidden, t["output.clusters.weight"], t["output.clusters.bias"])
    return adaptive_log_probabilities(scores, tokens, config["adaptive_cutoffs"])


def adaptive_log_probabilities(scores, tokens, cuts):
    """The adaptive softmax written out in PyTorch: the head is the words before the first cut,
    those after the last and one token per cluster; a cluster's word has log p_head(its token) +
    log softmax over its cluster. scores [L, V], tokens [L, K] → log p [L, V]."""
    first, last = cuts[0], cuts[-1]
    head = torch.cat([scores[:, :first], scores[:, last:], tokens], 1).log_softmax(-1)
    parts = [head[:, :first]]
    for k in range(len(cuts) - 1):
        parts.append(head[:, first + scores.shape[1] - last + k:][:, :1] + scores[:, cuts[k]:cuts[k + 1]].log_softmax(-1))
    parts.append(head[:, first:first + scores.shape[1] - last])
    return torch.cat(parts, 1)


@pytest.mark.parametrize("output", [[], ["--adaptive-softmax", "3,6"]], ids=["full", "adaptive"])
def test_a_language_models_loss_at_every_position_is_pytorchs(attn, tmp_path, output):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("".join(f"the cat sat on the mat {'today' if i % 3 else 'again'}. a dog ran past!\n"
                              for i in range(40)))
    model = tmp_path / "lm.safetensors"
    r = attn("train", "--task", "lm", "--data", corpus, "--learn-embeddings", "12", "--heads", "3",
             "--layers", "2", "--context", "8", "--epochs", "3", "--seed", "5", "-o", model, *output)
    assert r.code == 0, r.err
    t, meta = read_safetensors(model)
    config = json.loads(meta["config"])
    assert ("adaptive_cutoffs" in config) == bool(output)
    assert config["task"] == "lm" and config["max_positions"] == 8
    vocab = json.loads(meta["input_words"])
    assert vocab[-2:] == ["<unk>", "<eos>"] and json.loads(meta["outputs"]) == vocab
    # attn eval's loss: the stream <eos> + tokens (unknown → <unk>) + <eos> per paragraph, cut
    # into windows of 8, every position predicting the next token.
    text = tmp_path / "held.txt"
    text.write_text("the cat ran past the zebra.\na dog sat on the mat again!\n")
    r = attn("eval", "--model", model, "--data", text)
    assert r.code == 0, r.err
    got = json.loads(r.out)
    stream = ["<eos>"]
    for line in text.read_text().splitlines():
        stream += [w if w in vocab else "<unk>" for w in line.replace(".", " .").replace("!", " !").split()] + ["<eos>"]
    ids = torch.tensor([vocab.index(w) for w in stream])
    losses = []
    for begin in range(0, len(ids) - 1, 8):
        window = ids[begin:begin + 8 + 1]
        logits = torch_lm_logits(t, config, window[:-1])
        losses.append(F.cross_entropy(logits, window[1:], reduction="none"))
    want = torch.cat(losses)
    assert got["tokens"] == len(want) == len(stream) - 1
    assert abs(got["loss"] - want.mean().item()) < 2e-5 * max(1.0, abs(want.mean().item())), (got, want.mean())
    # predict: the next-token distribution after the prompt (read after an <eos>).
    prompt = ["<eos>", "the", "cat", "sat"]
    p = torch_lm_logits(t, config, torch.tensor([vocab.index(w) for w in prompt]))[-1].softmax(-1)
    r = attn("predict", "--model", model, "--top", "3", "the cat sat")
    for line in r.out.splitlines()[1:]:
        word, prob = line.split()
        assert abs(float(prob) - p[vocab.index(word)].item()) < 6e-5, (word, prob)
