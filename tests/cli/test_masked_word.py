"""attn train --task masked-word: label-free training on plain text (hidden words predicted from
both sides, scored against the word vectors), its checkpoints and --resume, and what the trained
context model gives to embed and predict. The corpus is made here: sentences from templates."""
import json
import os
import random
import struct
import subprocess
import time

import pytest

from conftest import ATTN, BUILTIN_WIDTH, one_error_line, run_attn

SUBJECTS = ["the cat", "the dog", "a bird", "the farmer", "my neighbour", "the child"]
VERBS = ["sat on", "looked at", "walked to", "slept near", "ran past"]
PLACES = ["the mat", "the river bank", "the old barn", "the garden", "the window", "the road"]


def write_corpus(path, lines=420, seed=0):
    r = random.Random(seed)
    with open(path, "w", encoding="utf-8") as f:
        for _ in range(lines):
            f.write(f"{r.choice(SUBJECTS)} {r.choice(VERBS)} {r.choice(PLACES)} . "
                    f"{r.choice(SUBJECTS)} {r.choice(VERBS)} {r.choice(PLACES)} .\n")
    return path


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    if not os.path.exists(ATTN):
        pytest.fail(f"attn binary not found at {ATTN} (build first, or set ATTN_BIN)")
    return write_corpus(tmp_path_factory.mktemp("corpus") / "corpus.txt")


def train(corpus, out, *extra):
    return run_attn("train", "--task", "masked-word", "--data", corpus, "--layers", "1",
                    "--epochs", "3", "--seed", "2", "-o", out, *extra)


@pytest.fixture(scope="module")
def model(corpus, tmp_path_factory):
    out = tmp_path_factory.mktemp("model") / "context.safetensors"
    r = train(corpus, out)
    assert r.code == 0, r.err
    return out, r.err


def epoch_losses(err):
    return [float(line.split("loss")[1].split()[0]) for line in err.splitlines()
            if line.startswith("epoch ") and " loss " in line]


def test_the_masked_word_loss_falls_and_a_share_is_held_out(model):
    out, err = model
    losses = epoch_losses(err)
    assert len(losses) == 3, err
    assert losses[-1] < 0.8 * losses[0], losses
    assert "held out" in err and "(every 20th)" in err
    assert not os.path.exists(str(out) + ".checkpoint"), "a completed run removes its checkpoint"


def test_the_context_model_fills_a_gap(model):
    out, _ = model
    r = run_attn("predict", "--model", out, "--top", "5", "the cat sat on [MASK] mat .")
    assert r.code == 0, r.err
    assert r.out.split()[0] == "the", r.out
    r = run_attn("predict", "--model", out, "the cat sat on the mat")
    assert r.code == 1
    assert "[MASK]" in one_error_line(r)


def test_embed_model_gives_one_row_per_token_and_repeats(model, tmp_path):
    out, _ = model
    runs = [run_attn("embed", "--model", out, "--format", "json", "the dog sat on the river bank")
            for _ in range(2)]
    assert runs[0].code == 0, runs[0].err
    assert runs[0].out == runs[1].out, "embed --model is deterministic"
    j = json.loads(runs[0].out)
    assert j["tokens"] == ["the", "dog", "sat", "on", "the", "river", "bank"]
    assert len(j["embeddings"]) == 7 and all(len(row) == 100 for row in j["embeddings"])
    # Bidirectional: a word's vector depends on the words after it.
    other = json.loads(run_attn("embed", "--model", out, "--format", "json",
                                "the dog sat on the old barn").out)
    assert other["embeddings"][1] != j["embeddings"][1]
    lines = tmp_path / "lines.txt"
    lines.write_text("the cat looked at the garden\na bird ran past the road\n")
    r = run_attn("embed", "--model", out, "--format", "json", "--batch", lines, "-o", tmp_path / "o.jsonl")
    assert r.code == 0, r.err
    records = [json.loads(x) for x in (tmp_path / "o.jsonl").read_text().splitlines()]
    assert [len(x["tokens"]) for x in records] == [6, 6]
    assert all(len(x["embeddings"]) == len(x["tokens"]) for x in records)


def test_a_resumed_run_writes_the_file_an_uninterrupted_one_does(corpus, model, tmp_path):
    whole, _ = model
    out = tmp_path / "resumed.safetensors"
    checkpoint = str(out) + ".checkpoint"
    # Stop mid-epoch (a checkpoint every 5 steps, the stop at 17), then go on.
    r = train(corpus, out, "--checkpoint-steps", "5", "--stop-after-steps", "17")
    assert r.code == 0, r.err
    assert "--resume" in r.err and not out.exists() and os.path.exists(checkpoint)
    r = train(corpus, out, "--resume")
    assert r.code == 0, r.err
    assert "resumed from" in r.err and "at step 17" in r.err
    assert out.read_bytes() == whole.read_bytes()
    assert not os.path.exists(checkpoint)


def test_a_run_killed_after_a_periodic_checkpoint_resumes_to_the_same_file(corpus, model, tmp_path):
    """A checkpoint every step, the process killed (no chance to save) once one exists: the
    periodic checkpoint alone must carry the run to the same file."""
    whole, _ = model
    out = tmp_path / "killed.safetensors"
    checkpoint = str(out) + ".checkpoint"
    args = [ATTN, "train", "--task", "masked-word", "--data", str(corpus), "--layers", "1",
            "--epochs", "3", "--seed", "2", "-o", str(out), "--checkpoint-steps", "1"]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 60
    while not os.path.exists(checkpoint) and proc.poll() is None and time.time() < deadline:
        time.sleep(0.005)
    time.sleep(0.02)
    proc.kill()
    proc.wait()
    if not out.exists():  # killed before the end, as intended
        r = train(corpus, out, "--checkpoint-steps", "1", "--resume")
        assert r.code == 0, r.err
    assert out.read_bytes() == whole.read_bytes()


def training_record(path):
    b = path.read_bytes()
    return json.loads(json.loads(b[8:8 + struct.unpack("<Q", b[:8])[0]])["__metadata__"]["training"])


def test_group_by_length_batches_are_recorded_and_resume_to_the_same_file(corpus, model, tmp_path):
    """--group-by-length: batches of sentences of like length (the corpus's sentences run 5 to 7
    words), another model than the default batches', said in the training record, and a run
    stopped and resumed with it writes the uninterrupted file; a checkpoint of one kind of
    batches does not resume the other."""
    whole, _ = model
    grouped = tmp_path / "grouped.safetensors"
    r = train(corpus, grouped, "--group-by-length")
    assert r.code == 0, r.err
    assert training_record(grouped).get("group_by_length") is True
    assert "group_by_length" not in training_record(whole)
    assert grouped.read_bytes() != whole.read_bytes()
    out = tmp_path / "resumed.safetensors"
    r = train(corpus, out, "--group-by-length", "--checkpoint-steps", "5", "--stop-after-steps", "17")
    assert r.code == 0, r.err
    r = train(corpus, out, "--resume")
    assert r.code == 2
    assert "other data or options" in one_error_line(r)
    r = train(corpus, out, "--group-by-length", "--resume")
    assert r.code == 0, r.err
    assert out.read_bytes() == grouped.read_bytes()


def test_packed_sentences_are_recorded_resume_to_the_same_file_and_refuse_the_wrong_company(corpus, model, tmp_path):
    """--pack-sentences: consecutive sentences joined up to --max-length tokens (fewer, fuller
    sequences: another model than the default's), said in the training record; a run stopped
    and resumed with it writes the uninterrupted file; it is masked-word's, and not beside
    --group-by-length."""
    whole, _ = model
    packed = tmp_path / "packed.safetensors"
    r = train(corpus, packed, "--pack-sentences", "--max-length", "20")
    assert r.code == 0, r.err
    assert training_record(packed).get("pack_sentences") is True
    assert "pack_sentences" not in training_record(whole)
    assert packed.read_bytes() != whole.read_bytes()
    out = tmp_path / "resumed.safetensors"
    r = train(corpus, out, "--pack-sentences", "--max-length", "20", "--checkpoint-steps", "3", "--stop-after-steps", "7")
    assert r.code == 0, r.err
    r = train(corpus, out, "--pack-sentences", "--max-length", "20", "--resume")
    assert r.code == 0, r.err
    assert out.read_bytes() == packed.read_bytes()
    r = train(corpus, tmp_path / "both.safetensors", "--pack-sentences", "--group-by-length")
    assert r.code == 1 and "choose one" in one_error_line(r)
    r = run_attn("train", "--task", "lm", "--data", corpus, "--pack-sentences", "-o", tmp_path / "lm.safetensors")
    assert r.code == 1 and "masked-word" in one_error_line(r)
    assert not (tmp_path / "lm.safetensors").exists() and not (tmp_path / "both.safetensors").exists()


def test_resume_errors(corpus, tmp_path):
    out = tmp_path / "m.safetensors"
    r = train(corpus, out, "--resume")
    assert r.code == 2
    assert "no checkpoint to resume from" in one_error_line(r)
    r = train(corpus, out, "--stop-after-steps", "3")
    assert r.code == 0, r.err
    r = run_attn("train", "--task", "masked-word", "--data", corpus, "--layers", "2", "--epochs", "3",
                 "--seed", "2", "-o", out, "--resume")
    assert r.code == 2
    assert "other data or options" in one_error_line(r)
    bad = tmp_path / "bad.safetensors.checkpoint"
    bad.write_bytes(b"not a checkpoint")
    r = train(corpus, tmp_path / "bad.safetensors", "--resume")
    assert r.code == 2
    assert "not an attn checkpoint" in one_error_line(r)
    # every task resumes its own checkpoints only (classify takes --resume since issue #53)
    labelled = tmp_path / "labelled.tsv"
    labelled.write_text("".join(f"{'good' if i % 2 else 'bad'}\tline {i} of the text\n" for i in range(40)))
    r = run_attn("train", "--task", "classify", "--data", labelled, "--resume", "-o", out)
    assert r.code == 2
    assert "not a classify training checkpoint" in one_error_line(r)


def test_the_builtin_model_keeps_the_embed_batch_contract(tmp_path):
    """`attn embed --model builtin --format json --batch FILE -o OUT.jsonl`: one JSON record per
    line with "tokens" and "embeddings" (a row per token), the same bytes run to run."""
    lines = tmp_path / "lines.txt"
    lines.write_text("he sat on the bank of the river\nshe paid the money into her account at the bank\n")
    outs = []
    for k in range(2):
        out = tmp_path / f"out{k}.jsonl"
        r = run_attn("embed", "--model", "builtin", "--format", "json", "--batch", lines, "-o", out)
        assert r.code == 0, r.err
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]
    records = [json.loads(x) for x in outs[0].decode().splitlines()]
    assert len(records) == 2
    assert records[0]["tokens"] == "he sat on the bank of the river".split()
    for rec in records:
        assert len(rec["embeddings"]) == len(rec["tokens"])
        assert all(len(row) == BUILTIN_WIDTH for row in rec["embeddings"])


def test_neighbors_with_the_builtin_model_puts_three_readings_side_by_side():
    r = run_attn("neighbors", "--model", "builtin", "--word", "bank", "--top", "3",
                 "he sat on the bank of the river")
    assert r.code == 0, r.err
    assert 'static "bank"' in r.out and 'attention "bank"' in r.out and 'builtin "bank"' in r.out
    assert "moved toward" in r.out and "river" in r.out
    # The model's column is its fill at the word's place: hidden, what predict says of a [MASK]
    # there (the word itself left out, as the other columns leave it out).
    r = run_attn("neighbors", "--model", "builtin", "--word", "bank", "--top", "4", "--hide-token",
                 "he sat on the bank of the river")
    assert r.code == 0, r.err
    rows = [l.split() for l in r.out.splitlines() if l.strip()[:1].isdigit() and len(l.split()) == 9]
    column = [(row[7], row[8]) for row in rows]
    # (punctuation left out of the column: it lists words)
    p = run_attn("predict", "--model", "builtin", "--top", "40", "he sat on the [MASK] of the river")
    assert p.code == 0, p.err
    predicted = [tuple(l.split()) for l in p.out.splitlines()[1:]]
    assert column == [x for x in predicted if x[0] != "bank" and any(c.isalnum() for c in x[0])][:4]
    # With the word present the model reads other words there than with it hidden.
    v = run_attn("neighbors", "--model", "builtin", "--word", "bank", "--top", "4",
                 "he sat on the bank of the river")
    assert [l.split()[7] for l in v.out.splitlines() if l.strip()[:1].isdigit() and len(l.split()) == 9] \
        != [w for w, _ in column]
    # A sentence's last word, read with the word present, is often read as the full stop most
    # training sentences end with: the column lists words only, and as many as asked for.
    r = run_attn("neighbors", "--model", "builtin", "--word", "bank", "--top", "10",
                 "she paid the money into her account at the bank")
    assert r.code == 0, r.err
    column = [l.split()[7] for l in r.out.splitlines() if l.strip()[:1].isdigit() and len(l.split()) == 9]
    assert len(column) == 10 and all(any(c.isalnum() for c in w) for w in column), column
    r = run_attn("neighbors", "--model", "builtin", "--word", "shore", "he sat on the bank")
    assert r.code == 1
    assert "not a token of the text" in one_error_line(r)


def test_sentences_read_without_their_final_stop_leave_the_last_place_to_words(corpus, model, tmp_path):
    """--drop-final-stop P: a share of the sentences are read without their final . ! or ?. Every
    sentence of the corpus ends with one, so a model that always saw it reads the last place of a
    text without one as the stop's; one that never saw it does not. Recorded; other tasks refuse it."""
    whole, _ = model
    dropped = tmp_path / "dropped.safetensors"
    r = train(corpus, dropped, "--drop-final-stop", "1")
    assert r.code == 0, r.err
    assert training_record(dropped)["drop_final_stop"] == 1 and "drop_final_stop" not in training_record(whole)
    top = lambda m: run_attn("predict", "--model", m, "--top", "3", "the cat sat on the [MASK]").out.split()
    assert top(whole)[0] == "."
    assert "." not in top(dropped)
    r = run_attn("train", "--task", "lm", "--layers", "1", "--data", corpus, "--drop-final-stop", "0.5",
                 "-o", tmp_path / "lm.safetensors")
    assert r.code == 1 and "--drop-final-stop is for --task masked-word" in one_error_line(r), r.err
    assert not (tmp_path / "lm.safetensors").exists()


def test_shards_side_by_side_on_two_threads_write_the_one_thread_file(corpus, model, tmp_path):
    """--shards 2: a step's shards run side by side, one per thread, each on its own copy of the
    network; the file is the one a single thread writes (the shards in turn), and not the plain
    batch's (the gradient is summed in another order)."""
    outs = []
    for threads in ["1", "2"]:
        out = tmp_path / f"shards-t{threads}.safetensors"
        r = train(corpus, out, "--shards", "2", "--threads", threads, "--batch", "64")
        assert r.code == 0, r.err
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]
    plain = tmp_path / "plain.safetensors"
    assert train(corpus, plain, "--batch", "64").code == 0
    assert tensor_bytes(plain.read_bytes()) != tensor_bytes(outs[0])
    # The record says how the gradient was summed; absent, one shard.
    assert training_record(tmp_path / "shards-t1.safetensors")["shards"] == 2
    assert "shards" not in training_record(plain)


def tensor_bytes(b):
    """A safetensors file's tensors, without its header (and the training record in it)."""
    return b[8 + struct.unpack("<Q", b[:8])[0]:]
