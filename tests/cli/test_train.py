"""attn train / predict / eval: the contract of issue #4 end to end (outputs, progress, Ctrl-C,
the model file, errors)."""
import json
import os
import pty
import signal
import struct
import subprocess
import time

import pytest

from conftest import ATTN

DATA = os.path.join(os.path.dirname(__file__), "..", "data")
TOY = os.path.join(DATA, "seed003_toy.txt")


def read_metadata(path):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
    return header.pop("__metadata__"), header


@pytest.fixture
def toy_model(tmp_path, attn):
    model = tmp_path / "toy.safetensors"
    r = attn("train", "--task", "next-word", "--data", TOY, "-o", model)
    assert r.code == 0, r.err
    return model


def test_seed_003_toy_predicts_hate_after_not_like(attn, toy_model):
    r = attn("predict", "--model", toy_model, "--top", "4", "not like")
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    assert lines[0] == "hate"
    ranked = [line.split() for line in lines[1:]]
    assert len(ranked) == 4 and ranked[0][0] == "hate"
    probabilities = [float(p) for _, p in ranked]
    assert probabilities == sorted(probabilities, reverse=True)
    assert abs(sum(probabilities) - 1) < 1e-3
    assert attn("predict", "--model", toy_model, "--top", "0", "do like").out == "like\n"


def test_eval_prints_one_json_line(attn, toy_model):
    r = attn("eval", "--model", toy_model, "--data", TOY)
    assert r.code == 0, r.err
    assert r.out.count("\n") == 1
    out = json.loads(r.out)
    assert set(out) == {"accuracy", "loss", "n", "lines", "scored"}
    assert out["lines"] == 4 and out["scored"] == 8
    # 8 prefixes; "not" and "do" alone are each followed by both words, so 6 is the best possible.
    assert out["n"] == 8 and out["accuracy"] == 0.75 and out["loss"] > 0


def test_model_file_is_safetensors_with_config_and_vocabulary(toy_model):
    meta, tensors = read_metadata(toy_model)
    config = json.loads(meta["config"])
    assert config["task"] == "next-word" and config["embeddings"] == "default"
    assert config["heads"] == 4 and config["dim"] == 100
    assert sorted(json.loads(meta["outputs"])) == ["do", "hate", "like", "not"]
    assert "embedding.weight" not in tensors  # the embedded GloVe is in every attn binary
    assert tensors["attention.q_proj_weight"]["shape"] == [100, 100]
    assert tensors["head.2.weight"]["shape"] == [4, 100]


def test_same_seed_gives_the_same_file(attn, tmp_path):
    files = []
    for name, seed in [("a", "7"), ("b", "7"), ("c", "8")]:
        path = tmp_path / f"{name}.safetensors"
        r = attn("train", "--task", "next-word", "--data", TOY, "--learn-embeddings", "8",
                 "--heads", "2", "--epochs", "20", "--seed", seed, "-o", path)
        assert r.code == 0, r.err
        files.append(path.read_bytes())
    assert files[0] == files[1] and files[0] != files[2]


def test_classify_with_learned_embeddings_and_unknown_words(attn, tmp_path):
    data = tmp_path / "train.tsv"
    data.write_text("".join(f"{'pos' if good else 'neg'}\tthis is {'good' if good else 'bad'} {i}\n"
                            for i in range(20) for good in (True, False)))
    valid = tmp_path / "valid.tsv"
    valid.write_text("pos\tgood zzzunknown\nneg\tbad\nother\tgood\n")
    model = tmp_path / "m.safetensors"
    r = attn("train", "--task", "classify", "--data", data, "--valid", valid, "--learn-embeddings",
             "16", "--heads", "2", "--positions", "-o", model)
    assert r.code == 0, r.err
    assert "valid accuracy" in r.err
    r = attn("eval", "--model", model, "--data", valid)
    assert r.code == 0, r.err
    out = json.loads(r.out)
    # Every line counts (#27): the unknown label "other" cannot be scored, so it is wrong.
    assert out["n"] == 3 and out["scored"] == 2 and out["lines"] == 3
    assert abs(out["accuracy"] - 2 / 3) < 1e-12
    assert "1 words without an embedding" in r.err
    assert "1 of 3 lines could not be scored" in r.err and "count as wrong" in r.err
    r = attn("predict", "--model", model, "zzzunknown good")
    assert r.code == 0 and r.out.splitlines()[0] == "pos"
    assert "unknown word skipped: zzzunknown" in r.err


def test_plain_progress_lines_when_stderr_is_not_a_terminal(attn, tmp_path):
    r = attn("train", "--task", "next-word", "--data", TOY, "--epochs", "3",
             "-o", tmp_path / "m.safetensors")
    assert r.code == 0, r.err
    epochs = [line for line in r.err.splitlines() if line.startswith("epoch ")]
    assert len(epochs) == 3 and "\r" not in r.err
    assert "loss" in epochs[0] and "train accuracy" in epochs[0] and "tokens/s" in epochs[0]


def test_progress_bar_on_a_terminal(tmp_path):
    main, side = pty.openpty()
    proc = subprocess.run([ATTN, "train", "--task", "next-word", "--data", TOY, "--epochs", "2",
                           "-o", tmp_path / "m.safetensors"], stderr=side, stdout=subprocess.PIPE,
                          timeout=120)
    os.close(side)
    text = b""
    try:
        while chunk := os.read(main, 4096):
            text += chunk
    except OSError:
        pass
    os.close(main)
    assert proc.returncode == 0
    err = text.decode()
    assert "\r" in err and "ETA" in err and "step 1/1" in err and "epoch 2/2" in err


def test_ctrl_c_writes_no_model_and_keeps_the_training_state(tmp_path):
    model = tmp_path / "m.safetensors"
    model.write_bytes(b"previous")
    proc = subprocess.Popen([ATTN, "train", "--task", "classify", "--data",
                             os.path.join(DATA, "negation_train.tsv"), "--epochs", "100000",
                             "-o", model], stderr=subprocess.PIPE, stdout=subprocess.PIPE)
    proc.stderr.readline()  # the first epoch is done: training is under way
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert b"interrupted" in err
    assert model.read_bytes() == b"previous"
    # the one loop's checkpoint (issue #53): --resume goes on from it
    assert b"the training state is in" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.safetensors", "m.safetensors.checkpoint"]


@pytest.mark.parametrize("args, code, message", [
    (["--data", TOY, "-o", "m.safetensors"], 1, "--task"),
    (["--task", "poems", "--data", TOY, "-o", "m.safetensors"], 1, "--task 'poems'"),
    (["--task", "next-word", "--data", "missing.txt", "-o", "m.safetensors"], 2, "missing.txt"),
    (["--task", "next-word", "--data", TOY, "--heads", "3", "-o", "m.safetensors"], 1, "does not divide"),
    (["--task", "next-word", "--data", TOY, "--learn-embeddings", "8", "--vectors", "x", "-o", "m.st"],
     1, "exclude"),
    (["--task", "next-word", "--data", TOY, "--pool", "median", "-o", "m.safetensors"], 1,
     "--pool 'median'"),
    (["--task", "next-word", "--data", TOY, "--dropout", "1", "-o", "m.safetensors"], 1, "--dropout"),
    (["--task", "next-word", "--data", TOY, "--layers", "1", "--dim", "60", "-o", "m.safetensors"],
     1, "residual"),
])
def test_train_usage_and_input_errors(attn, tmp_path, args, code, message):
    r = attn("train", *args)
    assert r.code == code, r.err
    assert r.err.startswith("error: ") and message in r.err
    assert not (tmp_path / "m.safetensors").exists()


def test_classify_line_without_tab_names_the_line(attn, tmp_path):
    data = tmp_path / "bad.tsv"
    data.write_text("pos\tgood\nno tab here\n")
    r = attn("train", "--task", "classify", "--data", data, "-o", tmp_path / "m.safetensors")
    assert r.code == 2
    assert f"error: {data}: expected 'label<TAB>text' (no tab), line 2" in r.err


def test_predict_and_eval_errors(attn, toy_model, tmp_path):
    r = attn("predict", "--model", toy_model, "zzzunknown")
    assert r.code == 1 and "no word of the text is known" in r.err
    bogus = tmp_path / "bogus.safetensors"
    bogus.write_bytes(b"\x02\x00\x00\x00\x00\x00\x00\x00{}")
    r = attn("predict", "--model", bogus, "not like")
    assert r.code == 2 and "not an attn text model" in r.err
    r = attn("eval", "--model", toy_model, "--data", tmp_path / "missing.txt")
    assert r.code == 2 and "missing.txt" in r.err


def test_version_1_model_files_still_load(attn, tmp_path):
    # A model of the seeds' shape written as attn-text-model/1 was (no layers, pool or new words
    # in its config) predicts as it did.
    model = tmp_path / "m.safetensors"
    r = attn("train", "--task", "next-word", "--data", TOY, "--frozen-embeddings", "--pool", "mean",
             "--min-count", "0", "--dropout", "0", "-o", model)
    assert r.code == 0, r.err
    before = attn("predict", "--model", model, "--top", "4", "not like").out
    with open(model, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        data = f.read()
    meta = header["__metadata__"]
    meta["format"] = "attn-text-model/1"
    config = json.loads(meta["config"])
    for key in ["new_words", "layers", "feedforward", "pool", "dropout"]:
        del config[key]
    meta["config"] = json.dumps(config)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    old = tmp_path / "v1.safetensors"
    old.write_bytes(struct.pack("<Q", len(text)) + text + data)
    r = attn("predict", "--model", old, "--top", "4", "not like")
    assert r.code == 0, r.err
    assert r.out == before
