"""attn.TextModel and attn.embed(text, model=...): a trained model's contextual embeddings (its
last attention block's output per token), predictions and evaluation. Small model files are
written here by hand (random weights, stored embeddings) and rebuilt in NumPy float64; where the
CLI is built, the module is also held against `attn embed --model` and `attn predict`."""
import json
import os
import struct
import subprocess
import warnings

import numpy as np
import pytest

attn = pytest.importorskip("attn")

DATA = os.path.join(os.path.dirname(__file__), "..", "data")
ATTN = os.environ.get("ATTN_BIN") or os.path.join(os.path.dirname(__file__), "..", "..", "build", "bin", "attn")
WORDS = ["the", "movie", "was", "not", "good", "bad", "never", "."]
# float32 through ~5 rounding steps of short sums (≤ 12 terms): relative error near 1e-6.
RTOL = 1e-5
# The built-in context model's width (scripts/make_builtin_context_model.py: GloVe's 100).
BUILTIN_WIDTH = 100


def write_model(path, task, heads=2, embed_dim=6, dim=8, hidden=5, max_positions=0, seed=0):
    """A model file as attn train writes one (safetensors, F32, with __metadata__), random
    weights; returns its float64 tensors and config for the NumPy rebuild."""
    rng = np.random.default_rng(seed)
    outputs = ["negative", "positive"] if task == "classify" else WORDS[:5]
    shapes = {"embedding.weight": (len(WORDS), embed_dim), "head.0.weight": (hidden, dim),
              "head.0.bias": (hidden,), "head.2.weight": (len(outputs), hidden),
              "head.2.bias": (len(outputs),), "attention.out_proj.weight": (dim, dim),
              "attention.out_proj.bias": (dim,)}
    for p in "qkv":
        shapes[f"attention.{p}_proj_weight"] = (dim, embed_dim)
        shapes[f"attention.{p}_proj_bias"] = (dim,)
    if max_positions:
        shapes["position.weight"] = (max_positions, embed_dim)
    tensors = {name: rng.standard_normal(shape).astype(np.float32) for name, shape in shapes.items()}
    config = {"task": task, "embeddings": "stored", "embeddings_trained": True,
              "embed_dim": embed_dim, "dim": dim, "heads": heads, "hidden": hidden,
              "max_positions": max_positions}
    header, blobs, offset = {}, [], 0
    for name in sorted(tensors):
        blob = tensors[name].tobytes()
        header[name] = {"dtype": "F32", "shape": list(tensors[name].shape),
                        "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    header["__metadata__"] = {"format": "attn-text-model/1", "config": json.dumps(config),
                              "outputs": json.dumps(outputs), "input_words": json.dumps(WORDS)}
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))
    return {k: v.astype(np.float64) for k, v in tensors.items()}, config, outputs


def numpy_y(t, config, words):
    """The attention block's output y = out_proj(attention) [L, E], causal for next-word."""
    ids = [WORDS.index(w) for w in words]
    x = t["embedding.weight"][ids]
    if config["max_positions"]:
        x = x + t["position.weight"][: len(ids)]
    h, e = config["heads"], config["dim"]
    d, n = e // h, len(ids)

    def project(p):  # [L, E] → [H, L, D]
        y = x @ t[f"attention.{p}_proj_weight"].T + t[f"attention.{p}_proj_bias"]
        return y.reshape(n, h, d).transpose(1, 0, 2)

    q, k, v = project("q"), project("k"), project("v")
    s = q @ k.transpose(0, 2, 1) / np.sqrt(d)
    if config["task"] == "next-word":
        s = np.where(np.triu(np.ones((n, n), bool), 1), -np.inf, s)
    a = np.exp(s - s.max(-1, keepdims=True))
    a /= a.sum(-1, keepdims=True)
    o = (a @ v).transpose(1, 0, 2).reshape(n, e)
    return o @ t["attention.out_proj.weight"].T + t["attention.out_proj.bias"]


def numpy_probabilities(t, config, words):
    hidden = np.maximum(numpy_y(t, config, words).mean(0) @ t["head.0.weight"].T + t["head.0.bias"], 0)
    z = hidden @ t["head.2.weight"].T + t["head.2.bias"]
    p = np.exp(z - z.max())
    return p / p.sum()


def rel_error(got, want):
    return np.linalg.norm(np.asarray(got, np.float64) - want) / np.linalg.norm(want)


@pytest.fixture(scope="module")
def hand_models(tmp_path_factory):
    """{"classify": (path, tensors, config, outputs), "next-word": …} (next-word: causal, with
    3 learned positions)."""
    folder = tmp_path_factory.mktemp("models")
    out = {}
    for task, kwargs in [("classify", {}), ("next-word", {"max_positions": 3, "heads": 4, "seed": 1})]:
        path = folder / f"{task}.safetensors"
        out[task] = (path, *write_model(path, task, **kwargs))
    return out


def test_load_and_properties(hand_models):
    path, _, config, outputs = hand_models["classify"]
    m = attn.TextModel.load(path)
    assert m.labels == outputs and m.task == "classify" and m.dim == 8 and m.heads == 2
    assert repr(m) == "attn.TextModel(task='classify', labels=2, dim=8, heads=2)"
    assert attn.TextModel.load(str(path)).labels == outputs


@pytest.mark.parametrize("task,text,words", [
    ("classify", "The movie was not good.", ["the", "movie", "was", "not", "good", "."]),
    ("next-word", "the movie was", ["the", "movie", "was"]),
    # learned positions reach 3 tokens: the last 3 known words stay
    ("next-word", "the movie was never good", ["was", "never", "good"]),
])
def test_embed_is_the_attention_blocks_output(hand_models, task, text, words):
    path, t, config, _ = hand_models[task]
    tokens, e = attn.TextModel.load(path).embed(text)
    assert tokens == words
    assert isinstance(e, np.ndarray) and e.dtype == np.float32 and e.shape == (len(words), 8)
    assert rel_error(e, numpy_y(t, config, words)) < RTOL


def test_next_word_embeddings_are_causal(hand_models):
    m = attn.TextModel.load(hand_models["next-word"][0])
    _, short = m.embed("the movie")
    _, long = m.embed("the movie was")
    np.testing.assert_array_equal(long[:2], short)


def test_unknown_words_warn_or_raise_with_strict(hand_models):
    m = attn.TextModel.load(hand_models["classify"][0])
    with pytest.warns(UserWarning, match="not known to the model: zzqxv"):
        tokens, e = m.embed("the zzqxv movie")
    assert tokens == ["the", "movie"] and e.shape == (2, 8)
    with pytest.raises(attn.UsageError, match="unknown token 'zzqxv'"):
        m.embed("the zzqxv movie", strict=True)
    with pytest.raises(attn.UsageError, match="no word of the text is known") as info:
        m.embed("zzqxv qqzzx")
    assert info.value.kind == "usage"


def test_predict_gives_labels_and_probabilities(hand_models):
    path, t, config, outputs = hand_models["next-word"]
    m = attn.TextModel.load(path)
    got = m.predict("the movie", k=3)
    want = numpy_probabilities(t, config, ["the", "movie"])
    order = np.argsort(-want, kind="stable")[:3]
    assert [label for label, _ in got] == [outputs[i] for i in order]
    assert all(isinstance(p, float) for _, p in got)
    np.testing.assert_allclose([p for _, p in got], want[order], rtol=RTOL)
    assert len(m.predict("the movie")) == 5  # k=5 by default, all five outputs here
    assert len(m.predict("the movie", k=100)) == 5
    with pytest.raises(attn.UsageError):
        m.predict("the movie", k=0)


def test_evaluate_gives_accuracy_loss_and_n(hand_models, tmp_path):
    path, t, config, outputs = hand_models["classify"]
    lines = [("positive", "the movie was good"), ("negative", "the movie was not good"),
             ("negative", "never bad"), ("other", "good")]  # an unknown label counts as wrong
    data = tmp_path / "data.tsv"
    data.write_text("".join(f"{label}\t{text}\n" for label, text in lines))
    got = attn.TextModel.load(path).evaluate(data)
    assert set(got) == {"accuracy", "loss", "n", "lines", "scored"}
    assert got["n"] == 4 and got["lines"] == 4 and got["scored"] == 3
    probs = [numpy_probabilities(t, config, text.split()) for _, text in lines[:3]]
    labels = [outputs.index(label) for label, _ in lines[:3]]
    assert got["accuracy"] == pytest.approx(sum(p.argmax() == y for p, y in zip(probs, labels)) / 4)
    assert got["loss"] == pytest.approx(np.mean([-np.log(p[y]) for p, y in zip(probs, labels)]), rel=1e-5)


def test_attn_embed_takes_a_model_or_its_path(hand_models):
    path, *_ = hand_models["classify"]
    m = attn.TextModel.load(path)
    tokens, want = m.embed("the movie was bad")
    for model in (m, str(path), path):
        got = attn.embed("the movie was bad", model=model)
        assert len(got) == 3 and got[0] == tokens and got[2] is None
        np.testing.assert_array_equal(got[1], want)
    with pytest.raises(attn.UsageError, match="excludes"):
        attn.embed("the movie", vectors=attn.Vectors.load(), model=m)
    with pytest.raises(attn.UsageError, match="excludes"):
        attn.embed("the movie", scale="none", model=m)
    with pytest.raises(TypeError):
        attn.embed("the movie", model=3)
    # Without a model, attn.embed is basic self-attention on word vectors, as before.
    tokens, c, a = attn.embed("the movie was bad")
    assert c.shape == (4, 100) and a.shape == (4, 4)


def test_missing_model_is_an_input_error(tmp_path):
    with pytest.raises(attn.InputError) as info:
        attn.TextModel.load(tmp_path / "none.safetensors")
    assert info.value.file == str(tmp_path / "none.safetensors")
    with pytest.raises(attn.InputError):
        attn.embed("the movie", model=str(tmp_path / "none.safetensors"))
    broken = tmp_path / "broken.safetensors"
    broken.write_bytes(b"\x02\x00\x00\x00\x00\x00\x00\x00{}")
    with pytest.raises(attn.InputError, match="not an attn text model"):
        attn.TextModel.load(broken)


# ---- against the CLI ----

def cli():
    binary = os.environ.get("ATTN_BIN") or os.path.join(
        os.path.dirname(__file__), "..", "..", "build", "bin", "attn")
    if not os.path.exists(binary):
        pytest.skip("the attn CLI is not built (set ATTN_BIN)")
    return os.path.abspath(binary)


def run_cli(*args):
    r = subprocess.run([cli(), *map(str, args)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r.stdout


@pytest.fixture(scope="module")
def trained_model(tmp_path_factory):
    """The negation classifier trained by the CLI (default GloVe embeddings, 2 epochs)."""
    path = tmp_path_factory.mktemp("trained") / "negation.safetensors"
    run_cli("train", "--task", "classify", "--data", os.path.join(DATA, "negation_train.tsv"),
            "--epochs", "2", "--seed", "1", "-o", path)
    return path


@pytest.mark.parametrize("text", ["the movie was not good", "that book seemed never dull zzqxv"])
def test_embed_equals_the_clis_json(hand_models, trained_model, text):
    for path in (trained_model, hand_models["classify"][0], hand_models["next-word"][0]):
        want = json.loads(run_cli("embed", "--model", path, "--format", "json", text))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tokens, e = attn.TextModel.load(path).embed(text)
        if not want["tokens"]:
            continue
        assert tokens == want["tokens"]
        # The JSON holds each float32 in its shortest exact form: the same bits.
        np.testing.assert_array_equal(e, np.array(want["embeddings"], np.float32))


@pytest.mark.parametrize("text", ["the movie was not good", "the movie was good",
                                  "that book seemed never dull", "was bad"])
def test_predicts_first_label_is_the_clis_first_line(hand_models, trained_model, text):
    for path in (trained_model, hand_models["next-word"][0]):
        want = run_cli("predict", "--model", path, text).splitlines()[0]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert attn.TextModel.load(path).predict(text)[0][0] == want


def test_the_builtin_context_model_reads_each_token_present_or_hidden():
    """attn.TextModel.load("builtin"): the masked-word model in the library. Row t of embed() is
    its output at t with the whole text read (token t present); with hide_token=True, with token
    t hidden, so that row does not depend on token t itself."""
    m = attn.TextModel.load("builtin")
    assert m.task == "masked-word"
    tokens, rows = m.embed("he sat on the bank of the river")
    assert tokens == ["he", "sat", "on", "the", "bank", "of", "the", "river"]
    assert rows.shape == (8, BUILTIN_WIDTH) and rows.dtype == np.float32
    _, same = m.embed("he sat on the bank of the river")
    assert np.array_equal(rows, same)
    _, other = m.embed("he sat on the shore of the river")
    assert not np.allclose(rows[4], other[4])
    # Hidden: bank's own row is unchanged by another word in its place (it never sees the
    # word), the other rows change (they see it).
    _, hidden = m.embed("he sat on the bank of the river", hide_token=True)
    _, hidden_other = m.embed("he sat on the shore of the river", hide_token=True)
    assert np.array_equal(hidden[4], hidden_other[4])
    assert not np.allclose(hidden[5], hidden_other[5])


@pytest.mark.parametrize("pool", ["mean", "max", "cls", "last"])
def test_embed_pool_gives_the_clis_sentence_vector(pool):
    m = attn.TextModel.load("builtin")
    _, rows = m.embed("she paid the money into the bank")
    v = m.embed("she paid the money into the bank", pool=pool)
    want = {"mean": rows.mean(0, dtype=np.float64), "max": rows.max(0), "cls": rows[0], "last": rows[-1]}[pool]
    assert v.shape == (BUILTIN_WIDTH,) and v.dtype == np.float32
    np.testing.assert_allclose(v, want, rtol=1e-5, atol=1e-6)
    u = m.embed("she paid the money into the bank", pool=pool, normalize=True)
    np.testing.assert_allclose(np.linalg.norm(u), 1, atol=1e-6)
    if os.path.exists(ATTN):
        cli = json.loads(run_cli("embed", "--model", "builtin", "--pool", pool, "--normalize", "--format", "json",
                                 "she paid the money into the bank"))
        np.testing.assert_array_equal(u, np.array(cli["embedding"], np.float32))
    with pytest.raises(attn.UsageError):
        m.embed("the bank", pool="median")
    with pytest.raises(attn.UsageError):
        m.embed("the bank", normalize=True)


def test_evaluate_on_a_masked_word_model_hides_every_kth_word(tmp_path):
    text = tmp_path / "text.txt"
    text.write_text("he sat on the bank of the river .\nshe paid the money into the bank .\n" * 20)
    m = attn.TextModel.load("builtin")
    e = m.evaluate(text, every=5, seed=1)
    assert e["every"] == 5 and e["seed"] == 1 and e["lines"] == 40
    assert abs(e["hidden"] - (9 + 8) * 20 / 5) <= 1  # 9 and 8 tokens a line pair
    assert 0 <= e["top1"] <= e["top5"] <= 1
    if os.path.exists(ATTN):
        assert json.loads(run_cli("eval", "--model", "builtin", "--data", text, "--every", "5", "--seed", "1")) == e


def test_a_language_model_generates_and_reports_perplexity(tmp_path):
    """TextModel.generate on a language model trained by the attn CLI: greedy is deterministic,
    a seed repeats, and evaluate gives the perplexity attn eval prints."""
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("".join(f"the cat sat on the mat {i % 3}. the dog ran.\n" for i in range(60)))
    out = tmp_path / "lm.safetensors"
    r = subprocess.run([ATTN, "train", "--task", "lm", "--data", str(corpus), "--layers", "1", "--context", "16",
                        "--epochs", "2", "--threads", "1", "-o", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    m = attn.TextModel.load(out)
    assert m.task == "lm"
    greedy = m.generate("the cat", max_words=8, temperature=0)
    assert greedy == m.generate("the cat", max_words=8, temperature=0) and greedy.startswith(" ")
    assert m.generate(max_words=10, seed=4) == m.generate(max_words=10, seed=4)
    e = m.evaluate(corpus)
    assert set(e) >= {"perplexity", "loss", "tokens", "unknown_share"}
    with pytest.raises(attn.UsageError):
        m.generate("the cat", top_p=0)


def test_inspect_gives_every_layers_arithmetic_and_predictions():
    """TextModel.inspect: each layer's q, k, v and weights (softmax(scale·q·kᵀ), causal for a
    language model) and the words each layer's output points to; the last layer's, after the
    text's last token, are predict's."""
    m = attn.TextModel.load("builtin-lm")
    text = "the history of the city begins in"
    x = m.inspect(text)
    assert x["causal"] and x["tokens"][0] == "<eos>" and len(x["layers"]) == 4
    n = len(x["tokens"])
    for layer in x["layers"]:
        q, k, w = (layer[name].astype(np.float64) for name in ("q", "k", "weights"))
        assert q.shape == (m.heads, n, m.dim // m.heads) and w.shape == (m.heads, n, n)
        s = x["scale"] * q @ k.transpose(0, 2, 1)
        s[:, np.triu_indices(n, 1)[0], np.triu_indices(n, 1)[1]] = -np.inf
        e = np.exp(s - s.max(-1, keepdims=True))
        # float32 scores in the kernel against float64 here: an error relative to the weight
        np.testing.assert_allclose(w, e / e.sum(-1, keepdims=True), rtol=2e-5, atol=2e-6)
        assert len(layer["predictions"]) == n and len(layer["predictions"][0]) == 5
    last = x["layers"][-1]["predictions"][-1]
    assert [word for word, _ in last] == [word for word, _ in m.predict(text)]
    with pytest.raises(attn.UsageError):
        m.inspect(text, top=0)


def test_history_is_what_the_run_scored(tmp_path):
    model = tmp_path / "c.safetensors"
    r = subprocess.run([ATTN, "train", "--task", "classify", "--data", os.path.join(DATA, "negation_train.tsv"),
                        "--epochs", "2", "--patience", "9", "-o", str(model)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    h = attn.TextModel.load(str(model)).history
    assert [e["epoch"] for e in h["epochs"]] == [1, 2] and h["evaluations"] == []
    assert all(0 <= e["accuracy"] <= 1 and e["loss"] > 0 for e in h["epochs"])
    # The built-in model keeps the curve of the run that made it (a held-out score every 2,000
    # steps, scripts/make_builtin_context_model.py, and one at the end of each pass over the
    # text: two whole passes, the third cut by the hour), its accuracy rising.
    builtin = attn.TextModel.load("builtin").history
    steps = [e["step"] for e in builtin["evaluations"]]
    ends = [s for s in steps if s % 2000 != 0]
    assert [s for s in steps if s % 2000 == 0] == list(range(2000, 2000 * (len(steps) - len(ends)) + 1, 2000))
    assert len(ends) == 3 and ends[-1] == steps[-1] and steps[-2] < steps[-1] <= steps[-2] + 2000
    assert ends[1] == 2 * ends[0]  # whole passes of like steps
    assert len(steps) >= 10 and steps == sorted(steps)
    assert [e["epoch"] for e in builtin["epochs"]] == [1, 2, 3]
    assert builtin["evaluations"][-1]["accuracy"] > builtin["evaluations"][0]["accuracy"] + 0.1


def test_embed_takes_many_texts_at_once():
    m = attn.TextModel.load("builtin")
    texts = ["he sat on the bank of the river", "she paid the money into her account", "a cat"]
    vectors = m.embed(texts, pool="mean", normalize=True)
    assert vectors.shape == (3, BUILTIN_WIDTH) and vectors.dtype == np.float32
    for i, text in enumerate(texts):
        np.testing.assert_array_equal(vectors[i], m.embed(text, pool="mean", normalize=True))
    rows = m.embed(texts)
    assert [tokens for tokens, _ in rows] == [m.embed(t)[0] for t in texts]
    np.testing.assert_array_equal(rows[1][1], m.embed(texts[1])[1])
    hidden = m.embed(texts[:1], hide_token=True)
    np.testing.assert_array_equal(hidden[0][1], m.embed(texts[0], hide_token=True)[1])
    with pytest.raises(attn.UsageError, match=r"texts\[1\]"):
        m.embed(["a cat", "zzqxv qqzzx"], pool="mean")
    assert m.embed([], pool="mean").shape == (0, BUILTIN_WIDTH)


def test_embed_layer_reads_an_inner_layer_as_the_cli_does():
    """layer=k: encoder layer k's output (from 0; negative from the end, -1 the last), one text
    or many, pooled or not; the CLI's --layer gives the same bits; out of range raises."""
    m = attn.TextModel.load("builtin")
    text = "he sat on the bank of the river"
    _, last = m.embed(text)
    assert np.array_equal(m.embed(text, layer=-1)[1], last)
    _, inner = m.embed(text, layer=2)
    assert inner.shape == last.shape and not np.allclose(inner, last)
    assert np.array_equal(m.embed(text, layer=-4)[1], inner)  # six layers: -4 is 2
    assert np.array_equal(m.embed([text], layer=2)[0][1], inner)
    np.testing.assert_allclose(m.embed(text, pool="mean", layer=2), inner.mean(0, dtype=np.float64),
                               rtol=1e-5, atol=1e-6)
    if os.path.exists(ATTN):
        cli = json.loads(run_cli("embed", "--model", "builtin", "--layer", "2", "--format", "json", text))
        np.testing.assert_array_equal(inner, np.array(cli["embeddings"], np.float32))
    for bad in (6, -7):
        with pytest.raises(attn.UsageError, match="out of range"):
            m.embed(text, layer=bad)
        with pytest.raises(attn.UsageError, match="out of range"):
            m.embed([text], layer=bad)
