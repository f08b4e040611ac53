"""attn.TranslationModel and attn.train(task="translate") (issue #54): the Python side of the
translator gives what the command line gives."""
import json
import os
import subprocess

import pytest

attn = pytest.importorskip("attn")

DATA = os.path.join(os.path.dirname(__file__), "..", "data")
ATTN = os.environ.get("ATTN_BIN") or os.path.join(os.path.dirname(__file__), "..", "..", "build", "bin", "attn")
PAIRS = os.path.join(DATA, "toy_pairs.tsv")
OPTIONS = dict(layers=1, dim=32, heads=2, feedforward=64, pieces=80, seed=3, threads=1, epochs=40, batch_tokens=256,
               lr=0.003)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    path = tmp_path_factory.mktemp("py") / "toy.safetensors"
    model = attn.train(PAIRS, task="translate", output=path, progress=False, **OPTIONS)
    return model, path


def test_train_returns_a_translation_model_and_writes_the_clis_file(trained, tmp_path):
    model, path = trained
    assert isinstance(model, attn.TranslationModel)
    flags = [x for k, v in OPTIONS.items() for x in ("--" + k.replace("_", "-"), str(v))]
    cli = tmp_path / "cli.safetensors"
    r = subprocess.run([ATTN, "train", "--task", "translate", "--data", PAIRS, *flags, "-o", cli], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    assert cli.read_bytes() == path.read_bytes()


def test_translate_hypotheses_attention_and_evaluate(trained):
    model, path = trained
    assert model.translate("Ein Hund schläft im Park.") == "A dog sleeps in the park."
    assert model.translate(["Ein Hund schläft im Park.", "Ein Kind läuft am Strand."], beam=2) == [
        "A dog sleeps in the park.", "A child runs on the beach."]
    cli = subprocess.run([ATTN, "translate", "--model", path, "--n-best", "3", "Ein Kind läuft am Strand."],
                         capture_output=True, text=True).stdout.splitlines()
    hyps = model.hypotheses("Ein Kind läuft am Strand.", n_best=3, alignment=True)
    assert [h["text"] for h in hyps] == [l.split(" ||| ")[1] for l in cli]
    assert [j for _, j in hyps[0]["alignment"]] == list(range(6))
    a = model.attention("Ein Hund schläft.")
    assert a["source"][-1] == "</s>" and a["target"][-1] == "</s>" and a["read"][0] == "<s>"
    assert a["cross"][0].shape == (2, len(a["target"]), len(a["source"]))
    lines = [l.split("\t") for l in open(PAIRS, encoding="utf-8").read().splitlines()]
    e = model.evaluate([s for s, _ in lines], [t for _, t in lines])
    assert e["bleu"] > 90 and e["pairs"] == 60
    assert model.pieces("Hund")[0].startswith("▁")
    assert model.config["width"] == 32
    again = attn.TranslationModel.load(path)
    assert again.translate("Zwei Männer sitzen im Park.") == model.translate("Zwei Männer sitzen im Park.")
    with pytest.raises(attn.UsageError):
        model.translate("x", beam=0)
    with pytest.raises(attn.InputError, match="not a translation model"):
        attn.TranslationModel.load(os.path.join(DATA, "fixtures", "models", "cls_l0_glove.safetensors"))
