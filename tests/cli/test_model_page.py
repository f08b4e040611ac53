"""The page that looks inside a trained model (issue #30), in headless Chromium: for a model of
each kind the chosen layer and head are the ones shown, the neuron view's products sum to the
shown score and its softmax row sums to 1 and equals the library's weights, the predictions per
layer end with the model's own prediction; the model view has every layer × head; a 512-token
page renders within a second; every view exports as SVG and PNG."""
import base64
import html
import json
import os
import re
import subprocess
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from conftest import ATTN
from pictures import SVG, find_chromium, read_png, run_chromium, screenshot

DATA = os.environ.get("ATTN_TEST_DATA") or os.path.join(os.path.dirname(__file__), "..", "data")


@pytest.fixture(scope="module", autouse=True)
def chromium():
    if not find_chromium():
        pytest.skip("chromium is not installed (scripts/deps.sh installs it when run as root)")


def attn(*args, stdin=None):
    return subprocess.run([ATTN, *map(str, args)], input=stdin, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """One model of each kind: a 2-layer classifier and the seeds' next-word layer (both trained
    here in seconds), the built-in masked-word and language models."""
    d = tmp_path_factory.mktemp("page-models")
    classify, next_word = d / "classify.safetensors", d / "next.safetensors"
    r = attn("train", "--task", "classify", "--data", os.path.join(DATA, "negation_train.tsv"), "--layers", "2",
             "--heads", "2", "--epochs", "1", "--seed", "1", "-o", classify)
    assert r.returncode == 0, r.stderr
    r = attn("train", "--task", "next-word", "--data", os.path.join(DATA, "seed003_toy.txt"), "--heads", "2",
             "--epochs", "5", "-o", next_word)
    assert r.returncode == 0, r.stderr
    return {"classify": (classify, "the movie was not good", 2),
            "next-word": (next_word, "not like hate", 1),
            "masked-word": ("builtin", "he sat on the [MASK] of the river .", 6),
            "lm": ("builtin-lm", "the history of the city begins in", 4)}


def page(model, text, path):
    r = attn("heatmap", "--model", model, text, "-o", path)
    assert r.returncode == 0, r.stderr
    return path


def dom(path, fragment="", budget=20000):
    proc = run_chromium(f"file://{path}{fragment}", "--dump-dom", f"--virtual-time-budget={budget}")
    text = proc.stdout.decode()
    assert 'data-ready="1"' in text, proc.stderr.decode(errors="replace")[-2000:]
    return text


def page_data(path):
    text = path.read_text()
    return json.loads(re.search(r'<script type="application/json" id="attn-data">(.*?)</script>', text, re.S).group(1))


def library_weights(model, text, layer, head, tmp_path):
    """The weights as the library computes them, from the SVG of that one layer and head."""
    out = tmp_path / f"w{layer}{head}.svg"
    r = attn("heatmap", "--model", model, "--layer", layer, "--head", head, text, "-o", out)
    assert r.returncode == 0, r.stderr
    cells = [e for e in ET.parse(out).getroot().iter() if "cell" in e.attrib.get("class", "").split()]
    n = int(round(len(cells) ** 0.5))
    w = np.zeros((n, n))
    for cell in cells:
        w[int(cell.attrib["data-row"]), int(cell.attrib["data-col"])] = float(cell.find(SVG + "title").text.rsplit(": ", 1)[1])
    return w


def neuron_rows(text):
    """Each key row of the neuron view: (key, the product cells' exact values, score, scaled, weight)."""
    rows = []
    for key, body in re.findall(r'<tr class="key" data-key="(\d+)">(.*?)</tr>', text, re.S):
        cells = [float(v) for v in re.findall(r'<td class="cell[^"]*" title="([^"]+)"', body)]
        value = lambda cls: float(re.search(rf'<td class="{cls}" title="[^"]*" data-value="([^"]+)"', body).group(1))
        rows.append((int(key), cells, value("score"), value("scaled"), value("weight")))
    return rows


@pytest.mark.parametrize("kind", ["classify", "next-word", "masked-word", "lm"])
def test_each_kind_shows_the_chosen_layer_and_head_and_its_arithmetic(kind, models, tmp_path):
    model, text, layers = models[kind]
    out = page(model, text, tmp_path / f"{kind}.html")
    data = page_data(out)
    assert len(data["layers"]) == layers and len(data["layers"][0]["heads"]) >= 2
    tokens = data["queries"]
    layer, head = layers - 1 if layers > 1 else 0, 1
    query = data["focus"] if data["focus"] >= 0 else len(tokens) - 1
    shown = dom(out, f"#layer={layer}&head={head}&query={query}")
    assert f'data-layer="{layer}"' in shown and f'data-head="{head}"' in shown
    says = re.search(r'<span id="showing">(.*?)</span>', shown).group(1)
    assert (f"layer {layer} of {layers}" in says) == (layers > 1) and f"head {head} of" in says

    rows = neuron_rows(shown)
    scale = data["scale"]
    visible = query + 1 if data["causal"] else len(tokens)
    assert [r[0] for r in rows] == list(range(visible))  # a short text lists every key it sees
    for key, products, score, scaled, weight in rows:
        assert len(products) == data["layers"][layer]["heads"][head]["dim"]
        assert abs(sum(products) - score) <= 1e-9 * (1 + abs(score))  # the products sum to the score
        assert abs(scaled - score * scale) <= 1e-12 * (1 + abs(scaled))
    scaled = np.array([r[3] for r in rows])
    softmax = np.exp(scaled - scaled.max()) / np.exp(scaled - scaled.max()).sum()
    weights = np.array([r[4] for r in rows])
    np.testing.assert_allclose(weights, softmax, atol=1e-12)
    total = float(re.search(r'class="weight-total" data-value="([^"]+)"', shown).group(1))
    assert abs(total - 1) < 1e-12  # the softmax row sums to 1
    # … and is the row the library computes for that layer and head.
    library = library_weights(model, text, layer, head, tmp_path)
    np.testing.assert_allclose(weights, library[query, :visible], atol=2e-6)

    has_predictions = kind in ("masked-word", "lm")
    assert ('id="prediction-table"' in shown) == has_predictions
    if has_predictions:
        table = re.search(r'<table class="predictions" id="prediction-table">(.*?)</table>', shown, re.S).group(1)
        last = re.findall(r'<tr class="last" data-layer="(\d+)">(.*?)</tr>', table, re.S)
        assert len(last) == 1 and int(last[0][0]) == layers - 1
        words = [html.unescape(w) for w in re.findall(r'data-word="([^"]*)"', last[0][1])]
        predicted = attn("predict", "--model", model, text)
        assert predicted.returncode == 0, predicted.stderr
        # predict: the answer, then the top 5 with probabilities
        assert words == [line.split()[0] for line in predicted.stdout.splitlines()[1:6]]
        assert len(re.findall(r'<tr class="[^"]*" data-layer="\d+">', table)) == layers


def test_model_view_has_every_layer_and_head_and_marks_the_chosen(models, tmp_path):
    out = page("builtin-lm", "the history of the city begins in", tmp_path / "lm.html")
    shown = dom(out, "#layer=2&head=3")
    figures = re.findall(r'<figure (class="chosen" )?data-layer="(\d)" data-head="(\d)"|<figure data-layer="(\d)" data-head="(\d)"[^>]*class="chosen"', shown)
    assert len(re.findall(r"<figure ", shown)) == 16
    chosen = re.findall(r'<figure data-layer="(\d)" data-head="(\d)"[^>]*class="chosen"', shown)
    assert chosen == [("2", "3")], figures
    assert 'data-model-view-ms="' in shown
    pixels = screenshot(f"file://{out}#layer=2&head=3", tmp_path / "lm.png", 1300, 1400)
    rgb = pixels[:, :, :3].reshape(-1, 3).astype(int)
    assert len(np.unique(rgb, axis=0)) > 100
    assert np.any(np.all(np.abs(rgb - [11, 47, 102]) < 12, axis=1))  # a head's largest weight
    assert np.any(np.all(rgb == [214, 39, 40], axis=1))  # the chosen map's frame


def long_text(words=700):
    r = np.random.default_rng(0)
    vocabulary = "the of and in to a was is for on as by with he it that from his at an city river war".split()
    return " ".join(r.choice(vocabulary, size=words)) + " ."


def test_a_512_token_page_renders_within_a_second(tmp_path):
    out = tmp_path / "long.html"
    r = attn("heatmap", "--model", "builtin-lm", long_text(), "-o", out)
    assert r.returncode == 0, r.stderr
    data = page_data(out)
    assert len(data["queries"]) == 512  # the model's context: the text's last 512 tokens
    shown = dom(out)
    assert int(re.search(r'data-render-ms="(\d+)"', shown).group(1)) < 1000
    assert 'data-model-view-ms="' in shown
    # Labels thinned: never one per pixel row; the head view draws one token's lines.
    exported = dom(out, "#export=heatmap", budget=60000)
    svg = ET.fromstring(html.unescape(re.search(r'<pre class="export" id="export-svg">(.*?)</pre>', exported, re.S).group(1)))
    labels = [e for e in svg.iter(SVG + "text")]
    assert 0 < len(labels) < 2 * 512 / 4
    assert len([e for e in svg.iter(SVG + "image")]) == 1  # the cells as one bitmap
    assert len(re.findall(r'class="link"', exported)) <= 4 * 512


@pytest.mark.parametrize("view", ["heatmap", "head-view", "model-view", "neuron-view", "predictions"])
def test_every_view_exports_as_svg_and_png(view, tmp_path):
    out = page("builtin", "he sat on the [MASK] of the river .", tmp_path / "bank.html")
    shown = dom(out, f"#export={view}", budget=30000)
    assert 'data-exported="1"' in shown
    svg_text = html.unescape(re.search(r'<pre class="export" id="export-svg">(.*?)</pre>', shown, re.S).group(1))
    root = ET.fromstring(svg_text)
    assert root.tag == SVG + "svg"
    width, height = int(root.attrib["width"]), int(root.attrib["height"])
    texts = [e.text for e in root.iter(SVG + "text")]
    assert any("[MASK]" in (t or "") for t in texts) or view == "model-view"
    if view == "heatmap":
        rects = [e for e in root.iter(SVG + "rect") if e.attrib.get("fill", "").startswith("rgb(")]
        cells = [e for e in rects if e.attrib.get("class") != "legend"]
        assert len(cells) == 9 * 9 and len(rects) > len(cells)  # every cell, and a colour legend
    png = re.search(r'<pre class="export" id="export-png">data:image/png;base64,(.*?)</pre>', shown, re.S).group(1)
    path = tmp_path / f"{view}.png"
    path.write_bytes(base64.b64decode(png))
    pixels = read_png(path)
    assert pixels.shape[:2] == (2 * height, 2 * width)  # twice the size, for print
    assert len(np.unique(pixels[:, :, :3].reshape(-1, 3), axis=0)) > 20


def test_the_word_vectors_page_shows_the_seeds_arithmetic(tmp_path):
    out = tmp_path / "bank.html"
    r = attn("heatmap", "money bank grows", "-o", out)
    assert r.returncode == 0, r.stderr
    shown = dom(out, "#query=1")
    rows = neuron_rows(shown)
    assert [r[0] for r in rows] == [0, 1, 2]
    e = attn("embed", "--format", "json", "--scale", "none", "money bank grows")
    steps = json.loads(attn("embed", "--format", "json", "money bank grows").stdout)
    static = np.array(json.loads(e.stdout)["attention"])  # softmax of the raw products
    # The products of q = k = the word vectors sum to S = E·Eᵀ; the weights are embed's A.
    scores = np.array([r[2] for r in rows])
    np.testing.assert_allclose(np.exp(scores - scores.max()) / np.exp(scores - scores.max()).sum(), static[1], atol=1e-6)
    np.testing.assert_allclose([r[4] for r in rows], steps["attention"][1], atol=1e-6)


def test_a_page_past_the_limit_says_so_instead_of_drawing(tmp_path):
    """attn heatmap refuses texts past 1,000 tokens; a page built past that by other means (the
    library takes any heatmap) says so rather than freezing the tab."""
    out = page("builtin", "he sat on the [MASK] of the river .", tmp_path / "bank.html")
    text = out.read_text()
    data = page_data(out)
    many = json.dumps(["w"] * 1001)
    text = text.replace(json.dumps(data["queries"], separators=(",", ":")), many, 1)
    long_page = tmp_path / "long.html"
    long_page.write_text(text)
    shown = dom(long_page)
    assert 'id="too-long"' in shown and "1001 tokens" in shown and "at most 1000" in shown
    assert "<canvas" not in shown


def test_a_model_page_with_its_curve_and_exports_stays_one_offline_file(tmp_path):
    """The page of a trained model (every view, its training curve, an export run) is one file
    that asks the network for nothing."""
    from pictures import page_requests
    from test_heatmap import check_self_contained
    model = tmp_path / "toy.safetensors"
    r = attn("train", "--task", "next-word", "--data", os.path.join(DATA, "seed003_toy.txt"), "--layers", "2",
             "--heads", "2", "--epochs", "5", "-o", model)
    assert r.returncode == 0, r.stderr
    out = page(model, "not like hate", tmp_path / "toy.html")
    html_text = out.read_text()
    check_self_contained(html_text)
    assert 'id="training-curve-section"' in html_text
    log = tmp_path / "netlog.json"
    proc = run_chromium(f"file://{out}#export=training-curve", "--dump-dom", "--virtual-time-budget=20000",
                        f"--log-net-log={log}", "--host-resolver-rules=MAP * ~NOTFOUND")
    assert 'data-exported="1"' in proc.stdout.decode()
    assert page_requests(log) == []
