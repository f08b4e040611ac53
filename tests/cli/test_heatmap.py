"""attn heatmap and explain --html: the SVG's content and structure, the HTML page rendered in
headless Chromium with no network, the terminal colours of explain, and every error path."""
import base64
import json
import os
import pty
import re
import subprocess
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from conftest import ATTN, one_error_line
from pictures import SVG, find_chromium, page_requests, read_png, run_chromium, screenshot, svg_outline

GOLDEN = os.path.join(os.path.dirname(__file__), "..", "data", "heatmap_seed000.golden")
ANIMAL = "the animal didn't cross the street because it was too tired"  # seed 001's sentence
SEED_E = {"money": [0.1, 0.2, 0.3], "bank": [0.4, 0.5, 0.6], "grows": [0.7, 0.8, 0.9],
          "river": [0.2, 0.1, 0.4], "flows": [0.5, 0.3, 0.2]}


@pytest.fixture
def seed_vectors(tmp_path):
    path = tmp_path / "seed.txt"
    path.write_text("".join(f"{w} {' '.join(map(str, v))}\n" for w, v in SEED_E.items()))
    return path


@pytest.fixture
def chromium():
    if not find_chromium():
        pytest.skip("chromium is not installed (scripts/deps.sh installs it when run as root)")


def attention(attn, *args):
    r = attn("embed", "--format", "json", *args)
    assert r.code == 0, r.err
    out = json.loads(r.out)
    return out["tokens"], np.array(out["attention"])


def by_class(root, name):
    return [e for e in root.iter() if name in e.attrib.get("class", "").split()]


# ---- SVG ----

def test_svg_has_a_cell_per_weight_and_every_label(attn, tmp_path):
    out = tmp_path / "animal.svg"
    r = attn("heatmap", ANIMAL, "-o", out)
    assert r.code == 0, r.err
    assert "n't" in r.err and r.err.startswith("warning:")  # not in the default vectors
    tokens, a = attention(attn, ANIMAL)
    root = ET.parse(out).getroot()
    assert root.tag == SVG + "svg"
    cells = by_class(root, "cell")
    assert len(cells) == len(tokens) ** 2
    assert [e.text for e in by_class(root, "row-label")] == tokens
    assert [e.text for e in by_class(root, "col-label")] == tokens
    for cell in cells:
        i, j = int(cell.attrib["data-row"]), int(cell.attrib["data-col"])
        title = cell.find(SVG + "title").text
        assert title.startswith(f"{tokens[i]} ({i}) → {tokens[j]} ({j}): ")
        # The title holds the float32 weight exactly (its shortest text); JSON holds it too.
        assert np.float32(title.rsplit(": ", 1)[1]) == np.float32(a[i, j])
    assert len(by_class(root, "legend-step")) > 10 and by_class(root, "legend-tick")


def test_svg_structure_matches_golden(attn, seed_vectors, tmp_path):
    # Seed 000's five words, unscaled; ATTN_UPDATE_GOLDEN=1 rewrites the golden file.
    out = tmp_path / "seed.svg"
    r = attn("heatmap", "--vectors", seed_vectors, "--scale", "none",
             "money bank grows river flows", "-o", out)
    assert r.code == 0, r.err
    outline = svg_outline(out.read_text())
    if os.environ.get("ATTN_UPDATE_GOLDEN"):
        with open(GOLDEN, "w") as f:
            f.write(outline)
    with open(GOLDEN) as f:
        assert outline == f.read()


def test_svg_escapes_labels(attn, tmp_path):
    vectors = tmp_path / "odd.txt"
    vectors.write_text("& 1 0\n< 0 1\n> 1 1\n\" 0.5 0.5\nx 0.2 0.1\n")
    out = tmp_path / "odd.svg"
    r = attn("heatmap", "--vectors", vectors, 'x & < > "', "-o", out)
    assert r.code == 0, r.err
    root = ET.parse(out).getroot()
    assert [e.text for e in by_class(root, "row-label")] == ["x", "&", "<", ">", '"']


def test_head_selection(attn, tmp_path):
    all_heads, head0 = tmp_path / "all.svg", tmp_path / "0.svg"
    assert attn("heatmap", "money bank", "-o", all_heads).code == 0
    assert attn("heatmap", "--head", "0", "money bank", "-o", head0).code == 0
    assert all_heads.read_bytes() == head0.read_bytes()  # basic self-attention has one head


@pytest.mark.parametrize("args, code, words", [
    (["money", "-o", "x.gif"], 1, "x.gif: cannot tell the format"),
    (["money"], 1, "-o"),
    (["--head", "1", "money", "-o", "x.svg"], 1, "out of range"),
    (["--head", "-1", "money", "-o", "x.svg"], 1, "--head"),
    (["--head", "one", "money", "-o", "x.svg"], 1, "--head"),
    (["--scale", "wide", "money", "-o", "x.svg"], 1, "scale"),
    (["zzqxv", "-o", "x.html"], 1, "zzqxv"),
    (["--vectors", "missing.txt", "money", "-o", "x.svg"], 2, "missing.txt"),
])
def test_heatmap_errors(attn, tmp_path, monkeypatch, args, code, words):
    monkeypatch.chdir(tmp_path)
    r = attn("heatmap", *args)
    assert r.code == code, r.err
    assert words in one_error_line(r)
    assert os.listdir(tmp_path) == []  # no output, not even a temporary


def test_failed_heatmap_keeps_the_old_file(attn, tmp_path):
    out = tmp_path / "keep.svg"
    out.write_text("old")
    r = attn("heatmap", "zzqxv", "-o", out)
    assert r.code == 1
    assert out.read_text() == "old" and os.listdir(tmp_path) == ["keep.svg"]


# ---- a trained model: one panel per head ----

TOY = os.path.join(os.path.dirname(__file__), "..", "data", "seed003_toy.txt")


@pytest.fixture(scope="module")
def two_head_model(tmp_path_factory):
    model = tmp_path_factory.mktemp("model") / "toy.safetensors"
    r = subprocess.run([ATTN, "train", "--task", "next-word", "--data", TOY, "--heads", "2",
                        "--epochs", "20", "-o", str(model)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return model


def test_model_heatmap_has_a_panel_per_head(attn, two_head_model, tmp_path):
    out = tmp_path / "model.svg"
    r = attn("heatmap", "--model", two_head_model, "not zzqxv like hate", "-o", out)
    assert r.code == 0, r.err
    assert r.err.startswith("warning:") and "zzqxv" in r.err  # unknown: left out, not an error
    root = ET.parse(out).getroot()
    assert [p.attrib["data-head"] for p in by_class(root, "panel")] == ["0", "1"]
    cells = by_class(root, "cell")
    assert len(cells) == 2 * 3 * 3
    assert [e.text for e in by_class(root, "row-label")] == ["not", "like", "hate"] * 2
    weights = np.zeros((2, 3, 3))
    for cell in cells:
        h, i, j = (int(cell.attrib[f"data-{a}"]) for a in ("head", "row", "col"))
        weights[h, i, j] = float(cell.find(SVG + "title").text.rsplit(": ", 1)[1])
    # Next-word attention is causal: each row sums to 1 over the tokens up to its own.
    assert np.allclose(weights.sum(-1), 1, atol=1e-6)
    assert np.all(weights[:, np.triu_indices(3, 1)[0], np.triu_indices(3, 1)[1]] == 0)
    assert weights[0, 0, 0] == 1 and weights[1, 0, 0] == 1


def test_model_heatmap_head_selection_and_page(attn, two_head_model, tmp_path):
    one, page = tmp_path / "one.svg", tmp_path / "model.html"
    assert attn("heatmap", "--model", two_head_model, "--head", "1", "not like", "-o", one).code == 0
    assert [p.attrib["data-head"] for p in by_class(ET.parse(one).getroot(), "panel")] == ["0"]
    r = attn("heatmap", "--model", two_head_model, "not like", "-o", page)
    assert r.code == 0, r.err
    html = page.read_text()
    check_self_contained(html)
    assert "head 0" in html and "head 1" in html and "causal" in html


@pytest.mark.parametrize("args, code, words", [
    (["--scale", "none"], 1, "--model excludes --scale"),
    (["--vectors", "v.txt"], 1, "--vectors excludes --model"),
    (["--head", "2"], 1, "out of range"),
])
def test_model_heatmap_usage_errors(attn, two_head_model, tmp_path, monkeypatch, args, code,
                                    words):
    monkeypatch.chdir(tmp_path)
    r = attn("heatmap", "--model", two_head_model, *args, "not like", "-o", "x.svg")
    assert r.code == code, r.err
    assert words in one_error_line(r)
    assert os.listdir(tmp_path) == []


def test_model_heatmap_input_errors(attn, two_head_model, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = attn("heatmap", "--model", "missing.safetensors", "not like", "-o", "x.svg")
    assert r.code == 2 and "missing.safetensors" in one_error_line(r)
    r = attn("heatmap", "--model", two_head_model, "zzqxv", "-o", "x.svg")
    assert r.code == 1 and "no word of the text is known to the model" in one_error_line(r)
    assert os.listdir(tmp_path) == []


# ---- HTML ----

def page_data(html):
    return json.loads(re.search(r'<script type="application/json" id="attn-data">(.*?)</script>', html,
                                re.S).group(1))


def floats(text):
    return np.frombuffer(base64.b64decode(text), dtype="<f4")


def check_self_contained(html):
    # The only URL allowed is the SVG namespace name, which is a name, never fetched.
    urls = set(re.findall(r"https?://[^\s\"'<>)]+", html))
    assert urls <= {"http://www.w3.org/2000/svg"}, urls
    assert not re.search(r"<(link|iframe|img|object|embed)\b", html, re.I)
    assert not re.search(r"\b(src|href)\s*=", html, re.I)
    assert "@import" not in html and "url(" not in html and "@font-face" not in html


def test_heatmap_html_is_one_self_contained_file(attn, tmp_path):
    out = tmp_path / "animal.html"
    r = attn("heatmap", ANIMAL, "-o", out)
    assert r.code == 0, r.err
    html = out.read_text()
    check_self_contained(html)
    data = page_data(html)
    # One layer, one head whose query, key and value are the 11 tokens' word vectors.
    assert len(data["layers"]) == 1 and len(data["layers"][0]["heads"]) == 1
    head = data["layers"][0]["heads"][0]
    assert len(floats(head["q"])) == 11 * head["dim"] and head["k"] == head["q"] == head["v"]
    assert 'id="app"' in html and 'id="attn-data"' in html
    assert html.count('<section class="step">') == 5  # E, S, scaled S, A, C


def test_explain_html_writes_the_walkthrough(attn, tmp_path):
    out = tmp_path / "walk.html"
    r = attn("explain", "--html", "-o", out, "money bank grows")
    assert r.code == 0, r.err
    html = out.read_text()
    check_self_contained(html)
    titles = re.findall(r"<h3>(.*?)</h3>", html)
    assert [t.split(":")[0] for t in titles] == ["1. E", "2. S = E·Eᵀ", "3. S × 0.1", "4. A = softmax of each row",
                                                 "5. C = A·E"]
    # E and C are 100 wide: the first columns, "…", the last.
    assert "<th>d13</th><th class=\"gap\">…</th><th>d99</th>" in html and "<th>d50</th>" not in html
    assert html.count('<th class="sum">row sum</th>') == 1
    # The page's data gives embed's attention: softmax(scale·q·kᵀ), q = k = the word vectors.
    data = page_data(html)
    tokens, a = attention(attn, "money bank grows")
    assert data["queries"] == tokens and data["keys"] == tokens
    head = data["layers"][0]["heads"][0]
    q = floats(head["q"]).reshape(3, head["dim"]).astype(np.float64)
    s = data["scale"] * q @ q.T
    w = np.exp(s - s.max(1, keepdims=True))
    np.testing.assert_allclose(w / w.sum(1, keepdims=True), a, atol=1e-6)


def test_html_script_safe_labels(attn, tmp_path):
    vectors = tmp_path / "odd.txt"
    vectors.write_text("</script> 1 0\nx 0.2 0.1\n")
    out = tmp_path / "odd.html"
    # The tokenizer splits "</script>" into pieces; what matters is that none ends the script.
    r = attn("heatmap", "--vectors", vectors, "x", "-o", out)
    assert r.code == 0, r.err
    assert out.read_text().count("</script>") == 2


def test_html_renders_in_chromium_and_is_not_blank(attn, chromium, tmp_path):
    out = tmp_path / "animal.html"
    assert attn("heatmap", ANIMAL, "-o", out).code == 0
    pixels = screenshot(f"file://{out}#query=7", tmp_path / "page.png", 1400, 1000)
    rgb = pixels[:, :, :3].reshape(-1, 3)
    colors = np.unique(rgb, axis=0)
    assert len(colors) > 100, f"only {len(colors)} colours: a blank page?"
    ink = np.mean(np.any(rgb < 200, axis=1))
    assert ink > 0.02, f"only {ink:.1%} of the page is not near white"
    # The heatmap's darkest blue (the largest weight) is on screen.
    assert np.any(np.all(np.abs(rgb.astype(int) - [11, 47, 102]) < 12, axis=1))


def test_html_script_runs_and_draws_the_head_view(attn, chromium, tmp_path):
    out = tmp_path / "walk.html"
    assert attn("explain", "--html", "-o", out, "money bank grows").code == 0
    proc = run_chromium(f"file://{out}#query=1", "--dump-dom")
    dom = proc.stdout.decode()
    assert 'data-ready="1"' in dom, proc.stderr.decode(errors="replace")[-2000:]
    assert dom.count('class="link"') == 3  # pinned on "bank": its three lines
    # … and its three weights are printed beside the keys.
    _, a = attention(attn, "money bank grows")
    for w in a[1]:
        assert f">{w:.3f}</text>" in dom


def test_html_page_makes_no_network_request(attn, chromium, tmp_path):
    out = tmp_path / "animal.html"
    assert attn("heatmap", ANIMAL, "-o", out).code == 0
    # First show that the check sees a page that does reach out.
    leaky = tmp_path / "leaky.html"
    leaky.write_text('<img src="https://example.com/x.png"><script>fetch("http://example.org/y")'
                     "</script>")
    for page, expected in [(leaky, {"https://example.com/x.png", "http://example.org/y"}),
                           (out, set())]:
        log = tmp_path / f"{page.stem}.netlog.json"
        run_chromium(f"file://{page}", "--dump-dom", f"--log-net-log={log}",
                     '--host-resolver-rules=MAP * ~NOTFOUND')
        assert set(page_requests(log)) == expected


# ---- PNG ----

ANCHORS = [(255, 255, 255), (222, 235, 248), (143, 188, 230), (58, 127, 196), (11, 47, 102)]


def color_at(t):
    """viz::color_at: the anchors, linear between them, rounded half away from zero."""
    t = min(max(t, 0.0), 1.0) * (len(ANCHORS) - 1)
    i = min(int(t), len(ANCHORS) - 2)
    f = t - i
    return tuple(int(np.floor(a + (b - a) * f + 0.5)) if a + (b - a) * f >= 0 else 0
                 for a, b in zip(ANCHORS[i], ANCHORS[i + 1]))


def test_png_draws_every_weight_in_its_colour(attn, tmp_path):
    out = tmp_path / "bank.png"
    r = attn("heatmap", "money bank grows", "-o", out)
    assert r.code == 0, r.err
    pixels = read_png(out)
    colors = {tuple(c) for c in pixels[:, :, :3].reshape(-1, 3)}
    _, a = attention(attn, "money bank grows")
    for w in a.ravel():
        assert color_at(w / a.max()) in colors, w
    assert (11, 47, 102) in colors  # the largest weight
    assert (34, 34, 34) in colors  # the labels' ink


def test_png_of_a_model_has_a_panel_per_head_of_the_chosen_layer(attn, two_head_model, tmp_path):
    both, one = tmp_path / "both.png", tmp_path / "one.png"
    assert attn("heatmap", "--model", two_head_model, "not like hate", "-o", both).code == 0
    assert attn("heatmap", "--model", two_head_model, "--head", "1", "not like hate", "-o", one).code == 0
    def panels(path):
        """Runs of columns holding the darkest blue: each panel's weight of 1 (row 0 of a
        causal head), one run per panel."""
        dark = np.all(read_png(path)[:, :, :3] == (11, 47, 102), axis=2).any(axis=0)
        return int(np.sum(dark[1:] & ~dark[:-1]) + dark[0])

    assert panels(both) == 2 and panels(one) == 1


def test_svg_renders_in_chromium(attn, chromium, tmp_path):
    out = tmp_path / "animal.svg"
    assert attn("heatmap", ANIMAL, "-o", out).code == 0
    root = ET.parse(out).getroot()
    width, height = (int(float(root.attrib[k])) + 1 for k in ("width", "height"))
    pixels = screenshot(f"file://{out}", tmp_path / "animal.png", width, height)
    assert len(np.unique(pixels[:, :, :3].reshape(-1, 3), axis=0)) > 50


# ---- explain in a terminal ----

def explain_on_a_terminal(env_changes, *args):
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "TERM")}
    env["TERM"] = "xterm-256color"
    env.update(env_changes)
    master, slave = pty.openpty()
    proc = subprocess.Popen([ATTN, "explain", *args, "money bank grows"], stdout=slave,
                            stderr=subprocess.PIPE, env=env)
    os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the terminal closes when the program exits
            break
        if not chunk:
            break
        chunks.append(chunk)
    proc.wait(timeout=60)
    os.close(master)
    assert proc.returncode == 0
    return b"".join(chunks).decode().replace("\r\n", "\n")


ANSI = re.compile(r"\x1b\[[0-9;]*m")


def test_explain_colours_attention_on_a_terminal(attn):
    plain = attn("explain", "money bank grows").out
    assert "\x1b[" not in plain  # a pipe gets plain text
    colored = explain_on_a_terminal({})
    assert "\x1b[38;5;" in colored and "48;5;" in colored
    assert ANSI.sub("", colored) == plain  # the same text, coloured
    # Only A's cells: nine of them.
    assert len(re.findall(r"\x1b\[38;5;\d+;48;5;\d+m", colored)) == 9


@pytest.mark.parametrize("env, args", [({"NO_COLOR": "1"}, []), ({"NO_COLOR": ""}, []),
                                       ({"TERM": "dumb"}, []), ({}, ["--color", "never"])])
def test_explain_plain_when_asked(env, args):
    assert "\x1b[" not in explain_on_a_terminal(env, *args)


def test_explain_color_always(attn):
    r = attn("explain", "--color", "always", "money bank grows")
    assert "\x1b[38;5;" in r.out


def test_heatmap_help(attn):
    r = attn("heatmap", "--help")
    assert r.code == 0 and "--head" in r.out and ".html" in r.out
