"""Translation on the command line (issue #54): attn train --task translate from aligned files or
source<TAB>target lines, attn translate (beam, --n-best, --alignment, --batch in input order),
attn eval's BLEU/chrF JSON line for a translator; a stopped run resumed writes the uninterrupted
run's file byte for byte; bad input is one error line, nothing written, no input touched."""
import json
import os

import pytest

from conftest import one_error_line, run_attn

DATA = os.environ.get("ATTN_TEST_DATA") or os.path.join(os.path.dirname(__file__), "..", "data")
PAIRS = os.path.join(DATA, "toy_pairs.tsv")
# A translator small enough to train in a second on 60 pairs (none held out: too few).
SMALL = ["--task", "translate", "--layers", "1", "--dim", "32", "--heads", "2", "--feedforward", "64", "--pieces",
         "80", "--seed", "3", "--threads", "1"]


def split_pairs(folder):
    source, target = folder / "train.de", folder / "train.en"
    lines = [l.split("\t") for l in open(PAIRS, encoding="utf-8").read().splitlines()]
    source.write_text("".join(s + "\n" for s, _ in lines), encoding="utf-8")
    target.write_text("".join(t + "\n" for _, t in lines), encoding="utf-8")
    return source, target


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    folder = tmp_path_factory.mktemp("translate")
    path = folder / "toy.safetensors"
    r = run_attn("train", *SMALL, "--data", PAIRS, "--epochs", "40", "--batch-tokens", "256", "--lr", "0.003", "-o", path)
    assert r.code == 0, r.err
    assert "60 pairs" in r.err and "no validation: 60 pairs are too few to hold some out" in r.err, r.err
    assert not os.path.exists(str(path) + ".checkpoint")
    return path


def test_aligned_files_train_the_model_the_tab_separated_lines_do(tmp_path):
    source, target = split_pairs(tmp_path)
    a, b = tmp_path / "a.safetensors", tmp_path / "b.safetensors"
    assert run_attn("train", *SMALL, "--data", PAIRS, "--epochs", "2", "-o", a).code == 0
    r = run_attn("train", *SMALL, "--source", source, "--target", target, "--epochs", "2", "-o", b)
    assert r.code == 0, r.err
    # The same pairs, the same model (the record names the files, so compare the weights' bytes).
    header = lambda p: p.read_bytes()[8 + int.from_bytes(p.read_bytes()[:8], "little"):]
    assert header(a) == header(b)


def test_translate_learns_the_toy_pairs_and_prints_as_marian_does(model):
    r = run_attn("translate", "--model", model, "Ein Hund schläft im Park.")
    assert r.code == 0, r.err
    assert r.out == "A dog sleeps in the park.\n"
    r = run_attn("translate", "--model", model, "--n-best", "3", "Ein Kind springt am Strand.")
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    assert len(lines) == 3
    scores = [float(l.split(" ||| ")[2]) for l in lines]
    assert all(l.startswith("0 ||| ") for l in lines) and scores == sorted(scores, reverse=True)
    assert lines[0].split(" ||| ")[1] == "A child jumps on the beach."
    r = run_attn("translate", "--model", model, "--alignment", "Zwei Männer sitzen im Park.")
    text, links = r.out.rstrip("\n").split(" ||| ")
    assert text == "Two men sit in the park."
    pairs = [tuple(map(int, l.split("-"))) for l in links.split()]
    assert [j for _, j in pairs] == list(range(6))  # every target word linked once, in order
    assert all(0 <= i < 5 for i, _ in pairs)


def test_batch_translates_every_line_in_input_order_the_same_as_one_at_a_time(model, tmp_path):
    sources = ["Ein Mann läuft auf der Straße.", "", "Eine Frau schläft am Strand.", "Ein Hund sitzt im Park."]
    batch = tmp_path / "in.de"
    batch.write_text("\n".join(sources) + "\n", encoding="utf-8")
    for threads in ("1", "2"):
        r = run_attn("translate", "--model", model, "--batch", batch, "--beam", "3", "--threads", threads)
        assert r.code == 0, r.err
        out = r.out.splitlines()
        assert len(out) == 4 and out[1] == ""
        for source, line in zip(sources, out):
            if source:
                assert run_attn("translate", "--model", model, "--beam", "3", source).out == line + "\n"
    # Standard input, a sentence a line.
    r = run_attn("translate", "--model", model, stdin="Ein Kind läuft im Park.\nEin Hund springt am Strand.\n")
    assert r.out == "A child runs in the park.\nA dog jumps on the beach.\n", r.err


def test_eval_prints_bleu_chrf_and_the_loss_as_one_json_line(model, tmp_path):
    source, target = split_pairs(tmp_path)
    r = run_attn("eval", "--model", model, "--source", source, "--target", target)
    assert r.code == 0, r.err
    j = json.loads(r.out)
    assert j["pairs"] == 60 and j["skipped"] == 0
    assert j["bleu"] > 90 and j["chrf"] > 90 and j["loss"] < 0.5, j
    assert j["bleu_signature"] == "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.0.0"
    assert j["chrf_signature"].startswith("nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no")
    assert len(j["precisions"]) == 4
    # --data of source<TAB>target lines scores the same.
    assert json.loads(run_attn("eval", "--model", model, "--data", PAIRS).out)["bleu"] == j["bleu"]


def test_tokenize_shows_the_models_pieces(model):
    r = run_attn("tokenize", "--model", model, "Ein Hund schläft.")
    assert r.code == 0, r.err
    assert r.out.startswith("▁") and "<eos>" not in r.out


def test_a_stopped_run_resumed_writes_the_uninterrupted_file(tmp_path):
    args = [*SMALL, "--data", PAIRS, "--epochs", "3", "--batch-tokens", "300", "--checkpoint-steps", "4"]
    full, part = tmp_path / "full.safetensors", tmp_path / "part.safetensors"
    assert run_attn("train", *args, "-o", full).code == 0
    r = run_attn("train", *args, "-o", part, "--stop-after-steps", "7")
    assert r.code == 0 and not part.exists(), r.err
    assert "stopped after 7 steps" in r.err
    r = run_attn("train", *args, "-o", part, "--resume")
    assert r.code == 0, r.err
    assert f"resumed from {part}.checkpoint at step 7" in r.err
    assert full.read_bytes() == part.read_bytes()
    assert not os.path.exists(str(part) + ".checkpoint")


def test_bf16_products_learn_the_pairs_and_resume_exactly(model, tmp_path):
    # --dtype bf16: every product of the step on bf16 operands with float32 sums (autocast). It
    # learns the toy pairs as float32 does, its weights are not float32's (the products did
    # round), the record says bf16, and a stopped run resumed writes the uninterrupted file.
    args = [*SMALL, "--data", PAIRS, "--epochs", "40", "--batch-tokens", "256", "--lr", "0.003", "--dtype", "bf16",
            "--checkpoint-steps", "20"]
    out, part = tmp_path / "bf16.safetensors", tmp_path / "part.safetensors"
    r = run_attn("train", *args, "-o", out)
    assert r.code == 0, r.err
    r = run_attn("translate", "--model", out, "Ein Hund schläft im Park.")
    assert r.code == 0 and r.out == "A dog sleeps in the park.\n", (r.out, r.err)
    weights = lambda p: p.read_bytes()[8 + int.from_bytes(p.read_bytes()[:8], "little"):]
    assert weights(out) != weights(model)
    b = out.read_bytes()
    record = json.loads(json.loads(b[8:8 + int.from_bytes(b[:8], "little")])["__metadata__"]["training"])
    assert record["dtype"] == "bf16"
    assert run_attn("train", *args, "-o", part, "--stop-after-steps", "30").code == 0
    r = run_attn("train", *args, "-o", part, "--resume")
    assert r.code == 0, r.err
    assert out.read_bytes() == part.read_bytes()


def test_bad_input_is_one_error_and_writes_nothing(model, tmp_path):
    source, target = split_pairs(tmp_path)
    out = tmp_path / "out.safetensors"
    short = tmp_path / "short.en"
    short.write_text("".join(open(target, encoding="utf-8").readlines()[:59]), encoding="utf-8")
    r = run_attn("train", *SMALL, "--source", source, "--target", short, "--epochs", "1", "-o", out)
    assert r.code == 2 and "60 lines, but" in one_error_line(r) and "59" in r.err, r.err
    assert not out.exists()
    bad = tmp_path / "bad.de"
    bad.write_bytes(open(source, "rb").read().replace(b"Park", b"P\xffrk", 1))
    r = run_attn("train", *SMALL, "--source", bad, "--target", target, "--epochs", "1", "-o", out)
    assert r.code == 2 and "UTF-8" in one_error_line(r), r.err
    assert not out.exists()
    r = run_attn("train", *SMALL, "--source", source, "--epochs", "1", "-o", out)
    assert r.code == 1 and "--source needs --target" in one_error_line(r)
    r = run_attn("train", "--task", "translate", "-o", out)
    assert r.code == 1 and "--source and --target" in one_error_line(r)
    r = run_attn("train", *SMALL, "--data", PAIRS, "--vocab", "10", "-o", out)
    assert r.code == 1 and one_error_line(r) == "error: --vocab is for --task lm"
    # A pair with an empty side, and one too long: skipped and counted, never cut.
    lines = open(PAIRS, encoding="utf-8").read().splitlines()
    odd = tmp_path / "odd.tsv"
    odd.write_text("\n".join(lines + ["Ein Hund.\t", "Hund " * 40 + "\tdog"]) + "\n", encoding="utf-8")
    r = run_attn("train", *SMALL, "--data", odd, "--epochs", "1", "--max-length", "30", "-o", out)
    assert r.code == 0, r.err
    assert "2 pairs skipped (1 with a side longer than --max-length 30 pieces, 1 with an empty side)" in r.err
    # translate's own errors.
    r = run_attn("translate", "--model", model, "--beam", "0", "x")
    assert r.code == 1 and one_error_line(r) == "error: --beam 0: must be 1 or more"
    r = run_attn("translate", "--model", model, "--beam", "2", "--n-best", "3", "x")
    assert r.code == 1 and "--n-best 3" in one_error_line(r)
    r = run_attn("translate", "--model", "builtin-lm", "x")
    assert r.code == 2 and "not a translation model" in one_error_line(r)
    r = run_attn("predict", "--model", model, "x")
    assert r.code == 2 and "is a translation model" in one_error_line(r)
    # A damaged piece table: one input error.
    data = bytearray(open(model, "rb").read())
    n = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + n])
    header["__metadata__"]["pieces"] = header["__metadata__"]["pieces"][:-8] + "AAAAAAA="
    blob = json.dumps(header).encode()
    damaged = tmp_path / "damaged.safetensors"
    damaged.write_bytes(len(blob).to_bytes(8, "little") + blob + bytes(data[8 + n:]))
    r = run_attn("translate", "--model", damaged, "x")
    assert r.code == 2 and "damaged.safetensors" in one_error_line(r), r.err


def test_a_long_source_is_translated_in_full(model):
    # Past the longest training pair: sinusoidal positions have no end, so nothing is cut.
    long = " ".join(["Ein Hund schläft im Park."] * 12)
    r = run_attn("translate", "--model", model, "--beam", "1", long)
    assert r.code == 0 and r.out.strip(), r.err


def test_tokenize_ids_and_vocabulary_agree(model):
    pieces = run_attn("tokenize", "--model", model, "Ein Hund schläft.").out.split()
    ids = [int(x) for x in run_attn("tokenize", "--model", model, "--ids", "Ein Hund schläft.").out.split()]
    table = run_attn("tokenize", "--model", model, "--vocabulary").out.split("\n")[:-1]
    assert table[:4] == ["<pad>", "<unk>", "<s>", "</s>"]
    assert [table[i] for i in ids] == pieces
    r = run_attn("tokenize", "--model", "builtin-lm", "--ids", "x")
    assert r.code == 1 and "translation model" in one_error_line(r)


def test_eval_scores_a_file_of_translations_without_a_model(model, tmp_path):
    source, target = split_pairs(tmp_path)
    hypotheses = tmp_path / "hyp.en"
    assert run_attn("translate", "--model", model, "--batch", source, "-o", hypotheses).code == 0
    scored = json.loads(run_attn("eval", "--translations", hypotheses, "--target", target).out)
    with_model = json.loads(run_attn("eval", "--model", model, "--source", source, "--target", target).out)
    assert scored["bleu"] == with_model["bleu"] and scored["chrf"] == with_model["chrf"]
    assert scored["lines"] == 60
    # The references themselves score 100.
    assert json.loads(run_attn("eval", "--translations", target, "--target", target).out)["bleu"] == pytest.approx(100)
    r = run_attn("eval", "--translations", hypotheses, "--target", PAIRS)
    assert r.code == 0  # (aligned by line count: 60 and 60)
    short = tmp_path / "short.en"
    short.write_text("A dog.\n", encoding="utf-8")
    r = run_attn("eval", "--translations", short, "--target", target)
    assert r.code == 2 and "1 lines, but" in one_error_line(r)


def test_heatmap_draws_a_translators_cross_attention(model, tmp_path):
    page, svg = tmp_path / "t.html", tmp_path / "t.svg"
    r = run_attn("heatmap", "--model", model, "-o", page, "Ein Hund schläft im Park.")
    assert r.code == 0, r.err
    html = page.read_text(encoding="utf-8")
    assert "cross layer 0 head 0" in html and "A dog sleeps in the park." in html and "Alignment" in html
    assert 'class="attn-alignment"' in html and '<line class="link"' in html
    from pictures import run_chromium  # the drawn alignment exports as the page's other views do
    proc = run_chromium(f"file://{page}#export=alignment", "--dump-dom", "--virtual-time-budget=20000")
    assert 'data-exported="1"' in proc.stdout.decode()
    assert "Encoder layer 0 self-attention" in html and "Decoder layer 0 self-attention" in html
    r = run_attn("heatmap", "--model", model, "--head", "1", "-o", svg, "Ein Hund schläft im Park.")
    assert r.code == 0, r.err
    picture = svg.read_text(encoding="utf-8")
    assert "Cross-attention of" in picture and 'data-head="1"' not in picture  # the one head asked for
    r = run_attn("heatmap", "--model", model, "--head", "2", "-o", svg, "Ein Hund.")
    assert r.code == 1 and "--head 2 is out of range" in one_error_line(r)


def test_save_steps_writes_the_model_so_far(tmp_path):
    out = tmp_path / "m.safetensors"
    r = run_attn("train", *SMALL, "--data", PAIRS, "--epochs", "2", "--batch-tokens", "300", "--save-steps", "5",
                 "-o", out)
    assert r.code == 0, r.err
    snapshot = tmp_path / "m.step5.safetensors"
    assert snapshot.exists()
    assert run_attn("translate", "--model", snapshot, "Ein Hund.").code == 0
