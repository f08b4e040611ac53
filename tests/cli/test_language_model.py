"""attn train --task lm, generate, eval and tokenize on a language model (issue #28): the loss
falls and held-out perplexity is reported; seed 003's toy is learned; a resumed run writes the
uninterrupted file; an .xz corpus gives the plain file's model; generation is deterministic at
temperature 0 and repeats with a seed; bad input is one clear error, nothing written."""
import json
import lzma
import os
import random
import struct

import pytest

from conftest import ATTN, one_error_line, run_attn

DATA = os.environ.get("ATTN_TEST_DATA") or os.path.join(os.path.dirname(__file__), "..", "data")
TOY = os.path.join(DATA, "seed003_toy.txt")

SUBJECTS = ["the cat", "the dog", "a bird", "the farmer", "my neighbour", "the child"]
VERBS = ["sat on", "looked at", "walked to", "slept near", "ran past"]
PLACES = ["the mat", "the river bank", "the old barn", "the garden", "the window", "the road"]


def corpus_text(paragraphs=300, seed=0):
    r = random.Random(seed)
    return "".join(f"{r.choice(SUBJECTS)} {r.choice(VERBS)} {r.choice(PLACES)}. "
                   f"Then {r.choice(SUBJECTS)} {r.choice(VERBS)} {r.choice(PLACES)}!\n" for _ in range(paragraphs))


SMALL = ["--layers", "1", "--context", "16", "--batch", "8", "--epochs", "3", "--seed", "1", "--threads", "1"]


def train(data, out, *extra):
    return run_attn("train", "--task", "lm", "--data", data, "-o", out, *SMALL, *extra)


def tensors(path):
    """The tensors (name → bytes) and metadata of a safetensors file, less the training record."""
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    head = json.loads(b[8:8 + n])
    meta = head.pop("__metadata__", {})
    meta.pop("training", None)
    data = b[8 + n:]
    return meta, {k: data[v["data_offsets"][0]:v["data_offsets"][1]] for k, v in head.items()}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    if not os.path.exists(ATTN):
        pytest.fail(f"attn binary not found at {ATTN} (build first, or set ATTN_BIN)")
    path = tmp_path_factory.mktemp("lm") / "corpus.txt"
    path.write_text(corpus_text())
    return path


@pytest.fixture(scope="module")
def model(corpus, tmp_path_factory):
    out = tmp_path_factory.mktemp("lm-model") / "lm.safetensors"
    r = train(corpus, out)
    assert r.code == 0, r.err
    return out, r.err


def test_the_loss_falls_and_held_out_perplexity_is_reported(model):
    out, err = model
    epochs = [l for l in err.splitlines() if l.startswith("epoch ")]
    assert len(epochs) == 3, err
    losses = [float(l.split("loss")[1].split()[0]) for l in epochs]
    assert losses[-1] < 0.7 * losses[0], losses
    perplexities = [float(l.split("perplexity")[1].split()[0]) for l in epochs]
    assert perplexities[-1] < 10, perplexities  # a template corpus: few choices at each place
    assert "held out" in err and "outside the vocabulary" in err
    assert not os.path.exists(str(out) + ".checkpoint")


def test_seed_003_toy_is_learned_by_the_language_model_too(tmp_path):
    # Each line is three words and its end: a context of 4 makes every window one line.
    out = tmp_path / "toy.safetensors"
    r = run_attn("train", "--task", "lm", "--data", TOY, "--context", "4", "-o", out, "--threads", "1")
    assert r.code == 0, r.err
    for prompt, word in [("not like", "hate"), ("do like", "like"), ("not hate", "like"), ("do hate", "hate")]:
        p = run_attn("predict", "--model", out, "--top", "0", prompt)
        assert p.code == 0 and p.out.strip() == word, (prompt, p.out, p.err)
    # --task next-word with no options is unchanged: "hate" after "not like".
    nw = tmp_path / "nw.safetensors"
    assert run_attn("train", "--task", "next-word", "--data", TOY, "-o", nw).code == 0
    assert run_attn("predict", "--model", nw, "--top", "0", "not like").out.strip() == "hate"


def test_a_resumed_run_writes_the_uninterrupted_file(corpus, tmp_path):
    full, part = tmp_path / "full.safetensors", tmp_path / "part.safetensors"
    assert train(corpus, full).code == 0
    r = train(corpus, part, "--stop-after-steps", "7")
    assert r.code == 0 and not part.exists(), r.err
    assert os.path.exists(str(part) + ".checkpoint")
    r = train(corpus, part, "--resume")
    assert r.code == 0, r.err
    assert tensors(full) == tensors(part)
    assert not os.path.exists(str(part) + ".checkpoint")


def test_an_xz_corpus_gives_the_plain_files_model(corpus, model, tmp_path):
    xz = tmp_path / "corpus.txt.xz"
    xz.write_bytes(lzma.compress(corpus.read_bytes()))
    out = tmp_path / "xz.safetensors"
    assert train(xz, out).code == 0
    assert tensors(out) == tensors(model[0])


@pytest.mark.parametrize("output", [[], ["--adaptive-softmax", "50,150"]], ids=["full", "adaptive"])
def test_the_model_is_the_same_on_one_thread_or_two(output, tmp_path):
    # A shape whose products, cross-entropy, layer norms and bias gradients all cross their
    # thresholds for sharing the work (1,024 rows a step, 300 words): the threads split rows and
    # columns, but every sum keeps its order, so the bytes do not depend on the thread count.
    r = random.Random(5)
    words = [f"w{i}" for i in range(300)]
    data = tmp_path / "words.txt"
    data.write_text("".join(" ".join(r.choice(words) for _ in range(40)) + "\n" for _ in range(400)))
    outs = []
    for threads in ["1", "2"]:
        out = tmp_path / f"t{threads}.safetensors"
        res = run_attn("train", "--task", "lm", "--data", data, "-o", out, "--layers", "2", "--context", "64",
                       "--batch", "16", "--max-tokens", "4096", "--seed", "3", "--threads", threads, *output)
        assert res.code == 0, res.err
        outs.append(tensors(out))
    assert outs[0] == outs[1]


def test_bf16_output_products_learn_as_float32_does_and_resume_exactly(corpus, model, tmp_path):
    # --dtype bf16: the tied output's products on bf16 operands, float32 sums. The model learns
    # the corpus as well (a template text: few choices at each place), it is not the float32
    # model's bytes (the products did round), the record says bf16, and a resumed run still
    # writes the uninterrupted file.
    out, part = tmp_path / "bf16.safetensors", tmp_path / "bf16-part.safetensors"
    r = train(corpus, out, "--dtype", "bf16")
    assert r.code == 0, r.err
    perplexities = [float(l.split("perplexity")[1].split()[0]) for l in r.err.splitlines() if l.startswith("epoch ")]
    assert perplexities[-1] < 10, perplexities
    assert tensors(out)[1] != tensors(model[0])[1]
    b = out.read_bytes()
    record = json.loads(json.loads(b[8:8 + struct.unpack("<Q", b[:8])[0]])["__metadata__"]["training"])
    assert record["dtype"] == "bf16"
    assert train(corpus, part, "--dtype", "bf16", "--stop-after-steps", "7").code == 0
    r = train(corpus, part, "--dtype", "bf16", "--resume")
    assert r.code == 0, r.err
    assert tensors(out) == tensors(part)
    # A checkpoint made in float32 is not resumed in bf16 (the training record differs).
    assert train(corpus, part, "--stop-after-steps", "7").code == 0
    r = train(corpus, part, "--dtype", "bf16", "--resume")
    assert r.code == 2, r.err
    # The file reads in float32 as any other: predict and eval run.
    assert run_attn("eval", "--model", out, "--data", corpus).code == 0


def test_max_tokens_bounds_the_run(corpus, tmp_path):
    out = tmp_path / "budget.safetensors"
    r = run_attn("train", "--task", "lm", "--data", corpus, "-o", out, "--layers", "1", "--context", "16",
                 "--batch", "4", "--max-tokens", "200", "--threads", "1")
    assert r.code == 0, r.err
    assert "the --max-tokens budget" in r.err
    trained = int(r.err.split(" tokens trained on")[0].split()[-1])
    assert 200 <= trained < 200 + 4 * 16, r.err


def test_generate_is_greedy_at_temperature_0_and_repeats_with_a_seed(model):
    out, _ = model
    greedy = [run_attn("generate", "--model", out, "--temperature", "0", "--max-words", "12", "the cat") for _ in range(2)]
    assert greedy[0].code == 0, greedy[0].err
    assert greedy[0].out == greedy[1].out
    assert greedy[0].out.startswith("the cat ")
    sampled = [run_attn("generate", "--model", out, "--seed", str(s), "--max-words", "30", "--top-k", "5")
               for s in (7, 7, 8)]
    assert sampled[0].out == sampled[1].out
    assert sampled[0].out != sampled[2].out
    # Readable text: no space before punctuation, a capital after a sentence's end.
    text = sampled[0].out
    assert " ." not in text and " !" not in text and " ," not in text, text
    assert text[0].isupper(), text


def test_generation_stops_at_the_end_of_the_paragraph(model):
    out, _ = model
    r = run_attn("generate", "--model", out, "--temperature", "0", "--max-words", "200", "the dog sat on")
    assert r.code == 0
    assert len(r.out.split()) < 40, r.out  # a template line ends long before 200 words
    # --ignore-eos (llama.cpp's): every one of the --max-words tokens, none of them the end token
    r = run_attn("generate", "--model", out, "--temperature", "0", "--max-words", "200", "--ignore-eos",
                 "--timings", "the dog sat on")
    assert r.code == 0 and json.loads(r.err.splitlines()[-1])["tokens"] == 200, r.err


def test_eval_reports_perplexity_over_every_token(model, tmp_path):
    out, _ = model
    text = tmp_path / "held.txt"
    text.write_text("the cat sat on the mat. Then the zebra ran past the road!\n\n")
    r = run_attn("eval", "--model", out, "--data", text)
    assert r.code == 0, r.err
    j = json.loads(r.out)
    assert set(j) >= {"perplexity", "loss", "tokens", "unknown_share"}
    # 15 tokens and the end token; "zebra" is unknown
    assert j["tokens"] == 16 and abs(j["unknown_share"] - 1 / 16) < 1e-9, j
    assert abs(j["perplexity"] - 2.718281828459045 ** j["loss"]) < 1e-6 * j["perplexity"]


def test_tokenize_shows_unknown_and_end_tokens(model, tmp_path):
    out, _ = model
    r = run_attn("tokenize", "--model", out, "The cat met a zebra.")
    assert r.code == 0, r.err
    assert r.out == "the cat <unk> a <unk> . <eos>\n"
    data = tmp_path / "two.txt.xz"
    data.write_bytes(lzma.compress(b"the dog.\n\nthe emu!\n"))
    r = run_attn("tokenize", "--model", out, "--data", data)
    assert r.out == "the dog . <eos>\nthe <unk> ! <eos>\n", r.out


def test_a_word_seen_once_is_unknown_unless_min_count_is_1(corpus, tmp_path):
    # <unk> must be a training target too, or held-out text's new words each cost ~15 nats.
    data = tmp_path / "with-zebra.txt"
    lines = corpus.read_text().splitlines(keepends=True)
    data.write_text(lines[0] + "the zebra sat on the mat.\n" + "".join(lines[1:]))  # (line 1 trains)
    for extra, want in [((), "the <unk> . <eos>\n"), (("--min-count", "1"), "the zebra . <eos>\n")]:
        out = tmp_path / f"m{len(extra)}.safetensors"
        r = train(data, out, *extra)
        assert r.code == 0, r.err
        t = run_attn("tokenize", "--model", out, "the zebra.")
        assert t.out == want, (extra, t.out)
    once = tmp_path / "once.txt"
    once.write_text("every word here occurs once only\n")
    r = train(once, tmp_path / "never.safetensors")
    assert r.code == 2 and "--min-count 2" in one_error_line(r), r.err
    assert not (tmp_path / "never.safetensors").exists()


def test_bad_input_is_one_clear_error_and_nothing_is_written(corpus, model, tmp_path):
    out = tmp_path / "never.safetensors"
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n")
    binary = tmp_path / "binary.txt"
    binary.write_bytes(b"ok line\n\xff\xfe\x00\x01 binary\n")
    for args, code, phrase in [
        (["--data", empty], 2, "no text"),
        (["--data", binary], 2, "not UTF-8"),
        (["--data", corpus, "--context", "0"], 1, "--context"),
        (["--data", corpus, "--vocab", "0"], 1, "--vocab"),
        (["--data", corpus, "--time", "soon"], 1, "--time"),
        (["--data", corpus, "--layers", "0"], 1, "--layers"),
    ]:
        r = run_attn("train", "--task", "lm", "-o", out, *args)
        assert r.code == code, (args, r.err)
        assert phrase in one_error_line(r), (args, r.err)
        assert not out.exists()
    classify = tmp_path / "classify.tsv"
    classify.write_text("".join(f"{'pos' if i % 2 else 'neg'}\tthe cat sat {i}\n" for i in range(20)))
    cls = tmp_path / "cls.safetensors"
    assert run_attn("train", "--task", "classify", "--data", classify, "--epochs", "1", "-o", cls).code == 0
    r = run_attn("generate", "--model", cls, "hello")
    assert r.code == 1 and "cannot generate" in one_error_line(r)
    # A prompt of unknown words: the unknown token, and a warning.
    r = run_attn("generate", "--model", model[0], "--max-words", "3", "zzqx qqzz")
    assert r.code == 0 and "read as <unk>: zzqx, qqzz" in r.err, r.err


def test_frozen_word_vectors_keep_their_rows_and_the_rest_learn(corpus, tmp_path):
    out = tmp_path / "frozen.safetensors"
    r = train(corpus, out, "--frozen-embeddings")
    assert r.code == 0, r.err
    meta, t = tensors(out)
    config = json.loads(meta["config"])
    assert config["embeddings_trained"] is False and config["new_words"] >= 2  # <unk>, <eos> at least
    assert json.loads(meta["new_words"])[-2:] == ["<unk>", "<eos>"]
    # the frozen rows are GloVe's (the default vectors), as attn vectors would print them
    words = json.loads(meta["input_words"])
    row = struct.unpack("<100f", t["embedding.weight"][words.index("cat") * 400:(words.index("cat") + 1) * 400])
    glove = run_attn("embed", "--scale", "none", "--format", "json", "cat")  # one token: C = E
    assert glove.code == 0
    assert max(abs(a - b) for a, b in zip(row, json.loads(glove.out)["embeddings"][0])) < 1e-6
    assert run_attn("generate", "--model", out, "--temperature", "0", "--max-words", "5", "the").code == 0


def test_heatmap_draws_every_layers_causal_heads(corpus, tmp_path):
    out = tmp_path / "two.safetensors"
    assert run_attn("train", "--task", "lm", "--data", corpus, "-o", out, *SMALL[:1], "2", *SMALL[2:]).code == 0
    svg = tmp_path / "h.svg"
    r = run_attn("heatmap", "--model", out, "the cat sat", "-o", svg)
    assert r.code == 0, r.err
    text = svg.read_text()
    for layer in (0, 1):
        for head in range(4):
            assert f"layer {layer} head {head}" in text
    assert "causal" in run_attn("heatmap", "--model", out, "the cat", "-o", tmp_path / "h.html").err + \
        (tmp_path / "h.html").read_text()
    one = tmp_path / "one.svg"
    assert run_attn("heatmap", "--model", out, "--layer", "1", "--head", "2", "the cat", "-o", one).code == 0
    r = run_attn("heatmap", "--model", out, "--layer", "2", "the cat", "-o", tmp_path / "x.svg")
    assert r.code == 1 and "out of range" in one_error_line(r)


def test_an_adaptive_softmax_learns_resumes_and_reads_as_one_distribution(corpus, tmp_path):
    # --adaptive-softmax 5,15: a head of the 5 most frequent words (and <unk>, <eos>), clusters
    # [5, 15) and [15, the vocabulary's end). It learns the template text as the full softmax
    # does, the file records its cuts, predict and generate read one distribution, and a resumed
    # run writes the uninterrupted file.
    out, part = tmp_path / "adaptive.safetensors", tmp_path / "adaptive-part.safetensors"
    r = train(corpus, out, "--adaptive-softmax", "5,15")
    assert r.code == 0, r.err
    perplexities = [float(l.split("perplexity")[1].split()[0]) for l in r.err.splitlines() if l.startswith("epoch ")]
    assert perplexities[-1] < 10, perplexities
    meta, t = tensors(out)
    config = json.loads(meta["config"])
    words = len(json.loads(meta["outputs"]))
    assert config["adaptive_cutoffs"] == [5, 15, words - 2], config
    assert len(t["output.clusters.weight"]) == 2 * 100 * 4 and len(t["output.clusters.bias"]) == 2 * 4
    p = run_attn("predict", "--model", out, "--top", "1000", "the cat sat on")
    assert p.code == 0, p.err
    probabilities = [float(l.split()[-1]) for l in p.out.splitlines() if l.startswith("  ")]
    assert len(probabilities) == words and abs(sum(probabilities) - 1) < 5e-3, p.out
    greedy = [run_attn("generate", "--model", out, "--temperature", "0", "--max-words", "12", "the dog") for _ in range(2)]
    assert greedy[0].code == 0 and greedy[0].out == greedy[1].out, greedy[0].err
    e = run_attn("eval", "--model", out, "--data", corpus)
    assert e.code == 0 and json.loads(e.out)["perplexity"] < 10, e.out + e.err
    assert train(corpus, part, "--adaptive-softmax", "5,15", "--stop-after-steps", "7").code == 0
    r = train(corpus, part, "--adaptive-softmax", "5,15", "--resume")
    assert r.code == 0, r.err
    assert tensors(out) == tensors(part)
    # Cuts that do not rise, or reach past the vocabulary, or a task without a tied output: usage errors.
    never = tmp_path / "never.safetensors"
    for args in (["--adaptive-softmax", "15,5"], ["--adaptive-softmax", f"5,{words - 2}"], ["--adaptive-softmax", "0"]):
        r = train(corpus, never, *args)
        assert r.code == 1 and "--adaptive-softmax" in one_error_line(r), (args, r.err)
        assert not never.exists()
    r = run_attn("train", "--task", "next-word", "--data", TOY, "--adaptive-softmax", "2", "-o", never)
    assert r.code == 1 and "--adaptive-softmax" in one_error_line(r), r.err
    # A model file whose cuts are out of order: an input error naming the field.
    b = out.read_bytes()
    n = struct.unpack("<Q", b[:8])[0]
    head = json.loads(b[8:8 + n])
    config["adaptive_cutoffs"] = [15, 5, words - 2]
    head["__metadata__"]["config"] = json.dumps(config)
    text = json.dumps(head).encode()
    bad = tmp_path / "bad-cuts.safetensors"
    bad.write_bytes(struct.pack("<Q", len(text)) + text + b[8 + n:])
    r = run_attn("eval", "--model", bad, "--data", corpus)
    assert r.code == 2 and "adaptive_cutoffs" in one_error_line(r), r.err
