"""Training curves (issue #30): the model file keeps what the run scored as it went, attn train
--plot draws it, the page of attn heatmap --model shows it; a resumed run keeps the uninterrupted
run's history; a wrong --plot file or a damaged history is one clear error."""
import json
import math
import os
import re
import struct
import xml.etree.ElementTree as ET

import pytest

from conftest import one_error_line, run_attn
from test_language_model import corpus_text, tensors

DATA = os.environ.get("ATTN_TEST_DATA") or os.path.join(os.path.dirname(__file__), "..", "data")
SVG = "{http://www.w3.org/2000/svg}"
LM = ["--task", "lm", "--layers", "1", "--context", "16", "--batch", "8", "--epochs", "2", "--seed", "1",
      "--threads", "1", "--eval-steps", "4"]


def metadata(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    return json.loads(b[8:8 + n]).get("__metadata__", {})


def series(svg_path):
    """Each line of the plot: its name → the values of its points, in order."""
    root = ET.parse(svg_path).getroot()
    out = {}
    for panel, g in enumerate(e for e in root.iter(SVG + "g") if e.attrib.get("class") == "series"):
        values = [float(c.find(SVG + "title").text.rsplit(": ", 1)[1]) for c in g.iter(SVG + "circle")]
        out[(panel, g.attrib["data-name"])] = values
    return out


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    path = tmp_path_factory.mktemp("curve") / "corpus.txt"
    path.write_text(corpus_text(200))
    return path


def test_classify_plot_has_a_point_per_epoch_as_printed(tmp_path):
    model, plot = tmp_path / "c.safetensors", tmp_path / "c.svg"
    r = run_attn("train", "--task", "classify", "--data", os.path.join(DATA, "negation_train.tsv"), "--epochs", "3",
                 "--patience", "9", "--seed", "1", "-o", model, "--plot", plot)
    assert r.code == 0, r.err
    history = json.loads(metadata(model)["history"])
    assert [e["epoch"] for e in history["epochs"]] == [1, 2, 3] and history["evaluations"] == []
    lines = series(plot)
    assert [round(v, 4) for v in lines[(0, "training")]] == [round(e["loss"], 4) for e in history["epochs"]]
    assert [round(v, 4) for v in lines[(1, "held-out")]] == [round(e["eval_loss"], 4) for e in history["epochs"]]
    assert [round(v, 4) for v in lines[(2, "held-out")]] == [round(e["accuracy"], 4) for e in history["epochs"]]
    # … which are the accuracies the run printed, epoch by epoch.
    printed = [float(a) for a in re.findall(r"valid accuracy (\d\.\d+)", r.err)]
    assert printed[:3] == [round(e["accuracy"], 4) for e in history["epochs"]]
    assert plot.read_text().startswith("<?xml")


def test_a_language_model_plots_every_eval_step_and_each_epochs_end(corpus, tmp_path):
    model, plot = tmp_path / "lm.safetensors", tmp_path / "lm.svg"
    r = run_attn("train", "--data", corpus, *LM, "-o", model, "--plot", plot)
    assert r.code == 0, r.err
    history = json.loads(metadata(model)["history"])
    scored = history["evaluations"]
    steps = [e["step"] for e in scored]
    # Every 4th step, and each epoch's end (2 epochs) where that is not one of them.
    assert steps == sorted(set(steps)) and [s for s in steps if s % 4 == 0] == list(range(4, steps[-1] + 1, 4))
    assert 1 <= len([s for s in steps if s % 4]) <= 2
    # Each --eval-steps score is the one printed at that step.
    printed = re.findall(r"step (\d+)/\d+ +(\d+) tokens +valid perplexity (\S+) +accuracy (\S+)", r.err)
    assert [int(p[0]) for p in printed] == [s for s in steps if s % 4 == 0]
    by_step = {e["step"]: e for e in scored}
    for s, tokens, perplexity, accuracy in printed:
        assert by_step[int(s)]["tokens"] == int(tokens)
        assert round(math.exp(by_step[int(s)]["loss"]), 2) == float(perplexity)
        assert round(by_step[int(s)]["accuracy"], 4) == float(accuracy)
    assert all(e["train_loss"] > 0 for e in scored)
    lines = series(plot)
    assert len(lines[(1, "held-out")]) == len(scored) == len(lines[(0, "training (since the last score)")])
    # The page of the model shows the same curve.
    page = tmp_path / "lm.html"
    assert run_attn("heatmap", "--model", model, "the cat sat", "-o", page).code == 0
    html = page.read_text()
    assert 'id="training-curve-section"' in html and html.count('class="series"') == 3


def test_a_resumed_run_keeps_the_uninterrupted_history(corpus, tmp_path):
    whole, part = tmp_path / "whole.safetensors", tmp_path / "part.safetensors"
    assert run_attn("train", "--data", corpus, *LM, "-o", whole).code == 0
    r = run_attn("train", "--data", corpus, *LM, "-o", part, "--checkpoint-steps", "3", "--stop-after-steps", "10")
    assert r.code == 0 and not part.exists(), r.err
    r = run_attn("train", "--data", corpus, *LM, "-o", part, "--checkpoint-steps", "3", "--resume")
    assert r.code == 0, r.err
    assert metadata(part)["history"] == metadata(whole)["history"]
    assert len(json.loads(metadata(whole)["history"])["evaluations"]) >= 3


def test_plot_takes_an_svg_file_and_is_checked_before_training(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = run_attn("train", "--task", "classify", "--data", os.path.join(DATA, "negation_train.tsv"), "-o", "m.safetensors",
                 "--plot", "curve.png")
    assert r.code == 1 and "curve.png: cannot tell the format" in one_error_line(r)
    assert os.listdir(tmp_path) == []


def test_a_damaged_history_is_an_input_error(tmp_path):
    model = tmp_path / "c.safetensors"
    assert run_attn("train", "--task", "classify", "--data", os.path.join(DATA, "negation_train.tsv"), "--epochs", "1",
                    "-o", model).code == 0
    b = open(model, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    header = json.loads(b[8:8 + n])
    for bad, words in [('{"epochs": 3, "evaluations": []}', "'history.epochs' must be a list"),
                       ('{"epochs": [], "evaluations": [{"step": 1}]}', "'evaluations[].tokens' is missing"),
                       ("not json", "history")]:
        header["__metadata__"]["history"] = bad
        text = json.dumps(header).encode()
        text += b" " * (-len(text) % 8)
        damaged = tmp_path / "damaged.safetensors"
        damaged.write_bytes(struct.pack("<Q", len(text)) + text + b[8 + n:])
        r = run_attn("predict", "--model", damaged, "the movie was good")
        assert r.code == 2, r.err
        assert "damaged.safetensors" in one_error_line(r) and words in one_error_line(r)


def test_a_plot_that_cannot_be_written_leaves_no_model_either(tmp_path):
    model = tmp_path / "c.safetensors"
    r = run_attn("train", "--task", "classify", "--data", os.path.join(DATA, "negation_train.tsv"), "--epochs", "1",
                 "-o", model, "--plot", tmp_path / "no-such-folder" / "c.svg")
    assert r.code != 0 and "no-such-folder" in one_error_line(r)
    assert os.listdir(tmp_path) == []


def test_snapshots_hold_the_model_at_their_steps_and_change_nothing_else(corpus, tmp_path):
    # --save-steps (Hugging Face's save_steps): every N steps the model so far beside the output.
    # One epoch, so that the run's model is its last step's weights, and a snapshot step that
    # divides the run's steps, so that one snapshot is taken at that last step.
    one_epoch = [a if a != "2" or LM[i - 1] != "--epochs" else "1" for i, a in enumerate(LM[:-2])]
    probe = run_attn("train", "--data", corpus, *one_epoch, "--eval-steps", "1", "-o", tmp_path / "probe.safetensors")
    assert probe.code == 0, probe.err
    total = int(re.search(r"step \d+/(\d+)", probe.err).group(1))
    every = next(d for d in (6, 5, 4, 3, 2, 1) if total % d == 0 and total // d >= 2)
    plain, saved = tmp_path / "plain.safetensors", tmp_path / "m.safetensors"
    args = [*one_epoch, "--eval-steps", str(every)]
    assert run_attn("train", "--data", corpus, *args, "-o", plain).code == 0
    r = run_attn("train", "--data", corpus, *args, "--save-steps", str(every), "-o", saved)
    assert r.code == 0, r.err
    # The run's own file is the one a run without snapshots writes, bit for bit.
    assert saved.read_bytes() == plain.read_bytes()
    steps = list(range(every, total + 1, every))
    snapshots = [tmp_path / f"m.step{s}.safetensors" for s in steps]
    assert sorted(tmp_path.glob("m.step*")) == sorted(snapshots)
    for s, path in zip(steps, snapshots):
        assert f"saved {path}: the model at step {s}" in r.err
    # The last is the finished model's weights; each earlier one a model of its own that attn reads.
    weights = lambda path: tensors(path)[1]
    assert weights(snapshots[-1]) == weights(saved)
    assert weights(snapshots[0]) != weights(snapshots[-1])
    text = tmp_path / "text.txt"
    text.write_text(corpus_text(5, seed=9))
    scored = [json.loads(run_attn("eval", "--model", p, "--data", text).out) for p in (snapshots[0], saved)]
    assert math.isfinite(scored[0]["perplexity"]) and scored[0]["perplexity"] != scored[1]["perplexity"]


def test_save_steps_that_miss_the_held_out_scores_are_a_usage_error(corpus, tmp_path):
    out = tmp_path / "m.safetensors"
    for extra in (["--save-steps", "6"], ["--save-steps", "4"]):
        args = LM + extra if extra[1] == "6" else LM[:-2] + extra
        r = run_attn("train", "--data", corpus, *args, "-o", out)
        assert r.code == 1 and "--save-steps" in one_error_line(r) and "--eval-steps" in r.err, r.err
        assert not list(tmp_path.iterdir())
    r = run_attn("train", "--data", os.path.join(DATA, "negation_train.tsv"), "--task", "classify", "--save-steps", "4", "-o", out)
    assert r.code == 1 and "--save-steps is for --task masked-word, lm and translate" in one_error_line(r), r.err
