"""Issue #27: attn tried as a hostile user would. Each test replays one class of the review's
cases (a crash, a lost or clobbered file, a hang, a silently wrong answer) and fails without
its fix."""
import json
import os
import signal
import stat
import struct
import subprocess
import time

import numpy as np
import pytest

from conftest import ATTN, one_error_line

DATA = os.environ.get("ATTN_TEST_DATA") or os.path.join(os.path.dirname(__file__), "..", "data")
NEGATION = os.path.join(DATA, "negation_train.tsv")


# ---- 1. a checkpoint's numbers are range-checked against the run it resumes ----

MAGIC = len(b"attn-checkpoint/2\n")
M64 = (1 << 64) - 1


def content_hash(b):
    """src/io/content_hash.cpp's hash, which a checkpoint's header holds of its body."""
    k1, k2 = 0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9
    rotl = lambda x, r: ((x << r) | (x >> (64 - r))) & M64
    def avalanche(x):
        x ^= x >> 30
        x = (x * k2) & M64
        x ^= x >> 27
        x = (x * 0x94D049BB133111EB) & M64
        return x ^ (x >> 31)
    lanes = [0x243F6A8885A308D3, 0x13198A2E03707344, 0xA4093822299F31D0, 0x082EFA98EC4E6C89]
    whole = len(b) // 32 * 32
    words = struct.unpack_from(f"<{whole // 8}Q", b)
    for i in range(0, len(words), 4):
        for lane in range(4):
            lanes[lane] = (rotl((lanes[lane] + words[i + lane] * k1) & M64, 31) * k2) & M64
    h = (len(b) * k1) & M64
    for lane in lanes:
        h = (rotl(h ^ avalanche(lane), 27) * k1) & M64
    for c in b[whole:]:
        h = ((h ^ c) * k2) & M64
    return avalanche(h)


def seal_checkpoint(path):
    """Writes the checksum of the checkpoint's (edited) body into its header."""
    b = path.read_bytes()
    n = struct.unpack("<Q", b[MAGIC:MAGIC + 8])[0]
    head = json.loads(b[MAGIC + 8:MAGIC + 8 + n])
    head["body_hash"] = f"{content_hash(b[MAGIC + 8 + n:]):016x}"
    text = json.dumps(head).encode()
    path.write_bytes(b[:MAGIC] + struct.pack("<Q", len(text)) + text + b[MAGIC + 8 + n:])


def edit_checkpoint(path, edit):
    """Rewrites the checkpoint's JSON header through edit(header) (the arrays stay as they were)."""
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[MAGIC:MAGIC + 8])[0]
    head = json.loads(b[MAGIC + 8:MAGIC + 8 + n])
    edit(head)
    text = json.dumps(head).encode()
    open(path, "wb").write(b[:MAGIC] + struct.pack("<Q", len(text)) + text + b[MAGIC + 8 + n:])


@pytest.fixture
def stopped_run(tmp_path, attn):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the cat sat on the mat . the dog ran past the road .\n" * 420)
    args = ["train", "--task", "masked-word", "--data", corpus, "--layers", "1", "--epochs", "3",
            "-o", tmp_path / "m.safetensors"]
    r = attn(*args, "--stop-after-steps", "3")
    assert r.code == 0, r.err
    return args, tmp_path / "m.safetensors.checkpoint"


@pytest.mark.parametrize("field, value", [
    ("best_epoch", 10**12), ("best_epoch", -1), ("epoch", 10**12), ("epoch", 0), ("batch", 10**9),
    ("chunk", 10**6), ("skip", 10**12), ("sequence", -5), ("offset", 10**15), ("done", 10**9),
    ("loss_sum", -1.0), ("best_accuracy", 7.0), ("best_epoch", 1.5), ("epoch", "2"),
    ("best_saved", 1), ("best_loss", None),
])
def test_resume_refuses_a_checkpoint_field_out_of_range(stopped_run, attn, field, value):
    args, checkpoint = stopped_run
    edit_checkpoint(checkpoint, lambda h: h["header"]["progress"].update({field: value}))
    r = attn(*args, "--resume")
    assert r.code == 2, r.err
    line = one_error_line(r)
    assert line.startswith(f"error: {checkpoint}: checkpoint field 'progress.{field}'"), line
    assert not (checkpoint.parent / "m.safetensors").exists()
    assert checkpoint.exists()


def test_resume_refuses_a_missing_field_and_a_non_finite_weight(stopped_run, attn):
    args, checkpoint = stopped_run
    original = checkpoint.read_bytes()
    edit_checkpoint(checkpoint, lambda h: h["header"]["progress"].pop("chunk"))
    assert "checkpoint field 'progress.chunk' is missing" in one_error_line(attn(*args, "--resume"))
    # NaN in the first float array (the header is unchanged, so the arrays' offsets hold).
    checkpoint.write_bytes(original)
    n = struct.unpack("<Q", original[MAGIC:MAGIC + 8])[0]
    head = json.loads(original[MAGIC + 8:MAGIC + 8 + n])
    name, entry = next((k, a) for k, a in head["arrays"].items()
                       if a["type"] == "f32" and a["bytes"] >= 4 and k.startswith("value."))
    at = MAGIC + 8 + n + entry["offset"]
    checkpoint.write_bytes(original[:at] + struct.pack("<f", float("nan")) + original[at + 4:])
    seal_checkpoint(checkpoint)  # past the checksum, to reach the finite check
    r = attn(*args, "--resume")
    assert r.code == 2
    assert f"checkpoint array '{name}' holds a non-finite value, element 0" in one_error_line(r)


def test_a_malformed_checkpoint_header_is_named_without_json_jargon(stopped_run, attn):
    args, checkpoint = stopped_run
    edit_checkpoint(checkpoint, lambda h: h["arrays"][next(iter(h["arrays"]))].update(offset="x"))
    r = attn(*args, "--resume")
    line = one_error_line(r)
    assert r.code == 2 and "json.exception" not in line and "needs a non-negative integer 'offset'" in line


# ---- 2. the checkpoint path is neither an input nor another output; only attn's own is removed ----

def test_checkpoint_naming_the_data_or_the_model_is_refused_before_training(tmp_path, attn):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the cat sat on the mat .\n" * 50)
    before = corpus.read_bytes()
    for checkpoint, other in [(corpus, "--data"), (tmp_path / "m.safetensors", "--output")]:
        r = attn("train", "--task", "masked-word", "--data", corpus, "--epochs", "1",
                 "-o", tmp_path / "m.safetensors", "--checkpoint", checkpoint)
        assert r.code == 1, r.err
        assert other in one_error_line(r)
    assert corpus.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corpus.txt"]


def test_a_finished_run_removes_only_a_checkpoint_it_wrote(tmp_path, attn):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the cat sat on the mat .\n" * 50)
    # A file that is not a checkpoint is never overwritten or removed.
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes")
    r = attn("train", "--task", "masked-word", "--data", corpus, "--epochs", "1", "--layers", "1",
             "-o", tmp_path / "m.safetensors", "--checkpoint", notes)
    assert r.code == 2 and "not an attn checkpoint" in one_error_line(r)
    assert notes.read_text() == "my notes"
    # A run that never saved its checkpoint leaves an older one alone...
    args = ["train", "--task", "masked-word", "--data", corpus, "--epochs", "2", "--layers", "1",
            "-o", tmp_path / "m.safetensors"]
    assert attn(*args, "--stop-after-steps", "1").code == 0
    old = tmp_path / "m.safetensors.checkpoint"
    kept = old.read_bytes()
    r = attn(*args, "--checkpoint-steps", "0")
    assert r.code == 0, r.err
    assert old.read_bytes() == kept
    # ... and the run that resumes from it removes it at the end.
    r = attn(*args, "--resume")
    assert r.code == 0, r.err
    assert not old.exists()


# ---- 4. outputs are distinct from each other and from every input ----

@pytest.fixture
def qkv(tmp_path):
    q = tmp_path / "q.npy"
    np.save(q, np.random.default_rng(0).standard_normal((1, 2, 5, 4)).astype(np.float32))
    return q


@pytest.mark.parametrize("extra, message", [
    (["-o", "o.npy", "--attn-weights-out", "o.npy"], "named by both --output and --attn-weights-out"),
    (["-o", "o.npy", "--grad-output", "q.npy", "--dq", "x.npy", "--dk", "x.npy", "--dv", "v.npy"],
     "named by both --dq and --dk"),
    (["-o", "q.npy"], "--output would overwrite --query"),
    (["-o", "./sub/../q.npy"], "--output would overwrite --query"),
    (["-o", "link.npy"], "--output would overwrite --query"),
])
def test_outputs_clobbering_each_other_or_an_input_are_refused(tmp_path, attn, qkv, extra, message):
    os.mkdir(tmp_path / "sub")
    os.symlink("q.npy", tmp_path / "link.npy")
    existing = tmp_path / "o.npy"
    existing.write_bytes(b"keep me")
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        r = attn("sdpa", "--query", "q.npy", "--key", "q.npy", "--value", "q.npy", *extra)
    finally:
        os.chdir(cwd)
    assert r.code == 1, r.err
    assert message in one_error_line(r)
    after = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    assert after == before


def test_mha_and_embed_outputs_are_checked_the_same_way(tmp_path, attn):
    r = attn("embed", "-o", tmp_path / "a.txt", "--batch", tmp_path / "a.txt")
    assert r.code == 1 and "would overwrite --batch" in one_error_line(r)
    w = tmp_path / "w.npy"
    r = attn("mha", "--weights", w, "--heads", "1", "--query", w, "-o", tmp_path / "x.npy",
             "--attn-weights-out", tmp_path / "x.npy")
    assert r.code == 1 and "named by both" in one_error_line(r)


# ---- 5. devices, FIFOs and symbolic links are written through, never replaced ----

def test_output_to_a_device_a_fifo_or_a_symlink_keeps_the_entry(tmp_path, attn, qkv):
    args = ["sdpa", "--query", qkv, "--key", qkv, "--value", qkv]
    # A character device of our own (the null device's numbers), so that a binary with the bug
    # replaces this node and not the system's /dev/null.
    null = tmp_path / "null"
    try:
        os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except PermissionError:
        null = None
    if null is not None:
        assert attn(*args, "-o", null).code == 0
        assert stat.S_ISCHR(os.lstat(null).st_mode)
    # A symbolic link: its target gets the array, the link stays a link.
    link = tmp_path / "link.npy"
    os.symlink("real.npy", link)
    assert attn(*args, "-o", link).code == 0
    assert os.path.islink(link) and np.load(tmp_path / "real.npy").shape == (1, 2, 5, 4)
    # A FIFO: what reads it gets the array.
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = subprocess.Popen(["cat", str(fifo)], stdout=subprocess.PIPE)
    r = attn(*args, "-o", fifo)
    data = reader.communicate(timeout=30)[0]
    assert r.code == 0, r.err
    assert data.startswith(b"\x93NUMPY") and os.path.exists(fifo) and not os.path.isfile(fifo)
    # A directory is refused, whole.
    r = attn(*args, "-o", tmp_path)
    assert r.code == 2 and "is a directory" in one_error_line(r)


# ---- 6. an interrupted command removes its temporaries, exit 130 ----

def test_ctrl_c_during_embed_batch_leaves_no_temporary(tmp_path):
    sentences = tmp_path / "in.txt"
    sentences.write_text("the river bank is muddy and the money is in the bank\n" * 200000)
    out = tmp_path / "out.jsonl"
    proc = subprocess.Popen([ATTN, "embed", "--batch", sentences, "-o", out],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 60
    while time.time() < deadline:  # until the temporary has records in it
        temps = [p for p in tmp_path.iterdir() if p.name.startswith("out.jsonl.tmp-")]
        if temps and temps[0].stat().st_size > 0:
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.txt"]


# ---- 9. a scale whose scores overflow float32 is refused, never NaN with exit 0 ----

def test_a_scale_that_overflows_float32_is_refused(tmp_path, attn, qkv):
    args = ["sdpa", "--query", qkv, "--key", qkv, "--value", qkv, "-o", tmp_path / "o.npy"]
    r = attn(*args, "--scale", "3e38")
    assert r.code == 1 and "overflow float32" in one_error_line(r)
    assert not (tmp_path / "o.npy").exists()
    # The float64 reference computes it, finite.
    assert attn(*args, "--scale", "3e38", "--kernel", "reference").code == 0
    assert np.isfinite(np.load(tmp_path / "o.npy")).all()
    # Inputs large enough to overflow at the default scale: an error too.
    big = tmp_path / "big.npy"
    np.save(big, np.full((1, 2, 5, 4), 1e20, np.float32))
    r = attn("sdpa", "--query", big, "--key", big, "--value", qkv, "-o", tmp_path / "p.npy")
    assert r.code == 2 and "overflow float32" in one_error_line(r)


# ---- 10. eval counts every line ----

def test_eval_counts_lines_it_cannot_score_as_wrong(tmp_path, attn):
    model = tmp_path / "m.safetensors"
    assert attn("train", "--task", "classify", "--data", NEGATION, "--epochs", "2", "-o", model).code == 0
    data = tmp_path / "d.tsv"
    data.write_text("positive\tthe film was great\nnegative\tthe film was not great\n"
                    "neutral\tthe film was great\npositive\tzzzq qqqz\n")
    r = attn("eval", "--model", model, "--data", data)
    assert r.code == 0, r.err
    out = json.loads(r.out)
    assert out["lines"] == 4 and out["n"] == 4 and out["scored"] == 2
    assert out["accuracy"] <= 0.5
    assert "2 of 4 lines could not be scored" in r.err
    empty = tmp_path / "e.tsv"
    empty.write_text("\n\n")
    r = attn("eval", "--model", model, "--data", empty)
    assert r.code == 2 and "no line to score" in one_error_line(r)


# ---- 11. values that should be refused ----

def write_attnvec(path, words, values, dtype="<f4"):
    blob = "".join(w + "\n" for w in words).encode()
    offset = (64 + len(blob) + 63) // 64 * 64
    head = b"ATTNVEC1" + struct.pack("<IIQQQQQ", 1, 1 if dtype == "<f4" else 2, len(words),
                                     values.shape[1], 64, len(blob), offset)
    head += b"\0" * (64 - len(head))
    path.write_bytes(head + blob + b"\0" * (offset - 64 - len(blob)) + values.astype(dtype).tobytes())


@pytest.mark.parametrize("dtype", ["<f4", "<f2"])
@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_attnvec_with_a_non_finite_value_is_refused(tmp_path, attn, dtype, bad):
    f = tmp_path / "v.attnvec"
    write_attnvec(f, ["river", "bank"], np.array([[0.1, 0.2, 0.3], [0.4, bad, 0.6]]), dtype)
    for args in (["vectors", "info", f], ["vectors", "convert", f, tmp_path / "o.attnvec"],
                 ["embed", "--vectors", f, "river bank"]):
        r = attn(*args)
        assert r.code == 2, r.err
        assert "not a finite number" in one_error_line(r) and "word 2 ('bank'), value 2" in r.err
    assert not (tmp_path / "o.attnvec").exists()


def model_with_config(tmp_path, attn, edit):
    """A trained model whose config metadata went through edit(dict)."""
    model = tmp_path / "m.safetensors"
    assert attn("train", "--task", "classify", "--data", NEGATION, "--epochs", "1", "-o", model).code == 0
    b = model.read_bytes()
    n = struct.unpack("<Q", b[:8])[0]
    head = json.loads(b[8:8 + n])
    config = json.loads(head["__metadata__"]["config"])
    head["__metadata__"]["config"] = edit(config)
    text = json.dumps(head).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(struct.pack("<Q", len(text)) + text + b[8 + n:])
    return bad


@pytest.mark.parametrize("edit, message", [
    (lambda c: json.dumps({**c, "heads": 4.5}), "model config field 'heads' must be an integer, got 4.5"),
    (lambda c: json.dumps({**c, "task": 7}), "model config field 'task' must be a string"),
    (lambda c: json.dumps({k: v for k, v in c.items() if k != "dim"}), "model config field 'dim' is missing"),
    (lambda c: "not json", "model config field 'config' is not valid JSON"),
    (lambda c: json.dumps({**c, "heads": 3}), "model config field 'heads' is 3, which does not divide dim"),
    (lambda c: json.dumps({**c, "layers": 100000}), "model config field 'layers' is 100000"),
])
def test_model_config_errors_name_the_field(tmp_path, attn, edit, message):
    bad = model_with_config(tmp_path, attn, edit)
    r = attn("predict", "--model", bad, "good")
    assert r.code == 2, r.err
    line = one_error_line(r)
    assert message in line and "json.exception" not in line


@pytest.mark.parametrize("seed", ["-1", "18446744073709551616", "1.5", "x"])
def test_a_seed_out_of_range_is_refused_not_wrapped(tmp_path, attn, seed):
    r = attn("train", "--task", "classify", "--data", NEGATION, "--seed", seed, "-o", tmp_path / "m.st")
    assert r.code == 1 and f"--seed '{seed}'" in one_error_line(r)


@pytest.mark.parametrize("args, message", [
    (["train", "--task", "classify", "--batch", "0"], "--batch: must be more than 0, not 0"),
    (["train", "--task", "classify", "--lr", "-0.5"], "--lr: must be more than 0, not -0.5"),
    (["train", "--task", "classify", "--lr", "fast"], "--lr: 'fast' is not a number"),
    (["train", "--task", "masked-word", "--eval-steps", "0"], "--eval-steps: must be more than 0, not 0"),
    (["embed", "--model", "builtin", "--layer", "-1"], "--layer: must be 0 or more, not -1"),
])
def test_a_number_out_of_its_range_is_named_plainly(tmp_path, attn, args, message):
    # Not CLI11's "Value 0 not in range 0.000000 to 1797…" (a range up to 1.8e308).
    extra = ["x"] if args[0] == "embed" else ["--data", NEGATION, "-o", tmp_path / "m.st"]
    r = attn(*args, *extra)
    assert r.code == 1 and one_error_line(r) == "error: " + message
    assert not (tmp_path / "m.st").exists()


def test_empty_valid_file_is_refused(tmp_path, attn):
    empty = tmp_path / "v.tsv"
    empty.write_text("")
    r = attn("train", "--task", "classify", "--data", NEGATION, "--valid", empty, "-o", tmp_path / "m.st")
    assert r.code == 2 and "no validation examples" in one_error_line(r)


# ---- 12. invalid UTF-8 and an unwritable output fail before training ----

@pytest.mark.parametrize("task, line", [("classify", b"positive\tgood caf\xe9 au lait\n"),
                                         ("next-word", b"the caf\xe9 was good\n"),
                                         ("masked-word", b"the caf\xe9 was good .\n")])
def test_invalid_utf8_in_training_data_is_refused_before_training(tmp_path, attn, task, line):
    data = tmp_path / "d.txt"
    good = b"positive\tthe film was great\n" if task == "classify" else b"the film was great .\n"
    data.write_bytes(good * 5 + line + good * 5)
    r = attn("train", "--task", task, "--data", data, "-o", tmp_path / "m.safetensors")
    assert r.code == 2, r.err
    err = one_error_line(r)
    assert "not UTF-8" in err and "0xE9" in err and err.endswith("line 6")
    assert "epoch" not in r.err  # refused before the first epoch


def test_an_output_in_a_missing_directory_fails_before_training(tmp_path, attn):
    r = attn("train", "--task", "classify", "--data", NEGATION, "-o", tmp_path / "no" / "m.safetensors")
    assert r.code == 2 and "does not exist" in one_error_line(r)
    assert "epoch" not in r.err


# ---- 13. sizes past a stated limit, devices as inputs, raw bytes escaped ----

@pytest.mark.parametrize("option, value", [("--dim", "1000000000"), ("--hidden", "1000000000"),
                                            ("--learn-embeddings", "1000000000"), ("--layers", "100000")])
def test_impossible_sizes_are_usage_errors(tmp_path, attn, option, value):
    r = attn("train", "--task", "classify", "--data", NEGATION, option, value, "-o", tmp_path / "m.st")
    assert r.code == 1, r.err
    assert "past attn's limit" in one_error_line(r)


@pytest.mark.parametrize("args", [["vectors", "info", "/dev/zero"], ["embed", "--vectors", "/dev/zero", "x"],
                                  ["predict", "--model", "/dev/zero", "x"],
                                  ["train", "--task", "classify", "--data", "/dev/zero", "-o", "m.st"]])
def test_a_device_as_input_is_refused_not_read_forever(tmp_path, attn, args):
    r = attn(*args)
    assert r.code == 2 and "is a device" in one_error_line(r)


def test_raw_bytes_from_a_file_are_escaped_in_messages(tmp_path, attn):
    f = tmp_path / "f.txt"
    f.write_bytes(b"river 0.1 0.2 0.3\nbank 0.4 0.\xe95\r\x00 0.6\n")
    r = attn("embed", "--vectors", f, "river bank")
    assert r.code == 2
    raw = r.err.encode("utf-8", "surrogateescape")
    line = one_error_line(r)
    assert "\\xE9" in line and "\r" not in line and "\x00" not in line
    r.err.encode("utf-8")  # decodes and encodes: nothing raw


# ---- 17, 18, 19: the command line's own words ----

def test_an_unknown_command_is_named_and_the_commands_listed(attn):
    r = attn("embedd", "x")
    assert r.code == 1
    assert one_error_line(r).startswith("error: unknown command 'embedd'; the commands are embed,")


def test_train_help_says_max_pooling(attn):
    r = attn("train", "--help")
    assert "→ mean →" not in r.out and "max by default" in r.out


def test_a_blank_line_in_embed_batch_is_warned_about(tmp_path, attn):
    f = tmp_path / "in.txt"
    f.write_text("the river bank\n\nthe money\n")
    r = attn("embed", "--batch", f, "--format", "json")
    assert r.code == 0
    assert "line 2: blank line (an empty record)" in r.err
    assert len(r.out.splitlines()) == 3


# ---- 21. repeated lines do not empty the training set ----

def test_repeated_lines_keep_a_training_set(tmp_path, attn):
    rng = np.random.default_rng(1)
    adjectives = ["good", "great", "fine", "nice", "bad", "awful", "poor", "dull"]
    nouns = ["film", "book", "meal"]
    sentences = [(("positive" if i < 4 else "negative"), f"the {n} was {a}")
                 for i, a in enumerate(adjectives) for n in nouns]
    lines = [sentences[int(rng.integers(len(sentences)))] for _ in range(640)]
    data = tmp_path / "d.tsv"
    data.write_text("".join(f"{l}\t{t}\n" for l, t in lines))
    r = attn("train", "--task", "classify", "--data", data, "--epochs", "2", "-o", tmp_path / "m.st")
    assert r.code == 0, r.err
    assert "lines held out" in r.err


# ---- 22. predict --batch; --threads on the heavy commands ----

def test_predict_batch_writes_one_record_per_line(tmp_path, attn):
    model = tmp_path / "m.safetensors"
    assert attn("train", "--task", "classify", "--data", NEGATION, "--epochs", "2", "--threads", "1",
                "-o", model).code == 0
    texts = tmp_path / "t.txt"
    texts.write_text("the film was great\n\nzzzq\nthe film was not great\n")
    out = tmp_path / "p.jsonl"
    r = attn("predict", "--model", model, "--batch", texts, "--top", "2", "-o", out, "--threads", "1")
    assert r.code == 0, r.err
    records = [json.loads(l) for l in out.read_text().splitlines()]
    assert [x["line"] for x in records] == [1, 2, 3, 4]
    assert records[1]["prediction"] is None and records[2]["prediction"] is None
    for x in (records[0], records[3]):
        single = attn("predict", "--model", model, "--top", "2", x["text"]).out.splitlines()
        assert x["prediction"] == single[0] and len(x["top"]) == 2
    assert "line 2" in r.err and "line 3" in r.err
    for command in (["embed", "x"], ["sdpa"], ["mha"], ["eval"]):
        assert "--threads" in attn(*command, "--help").out


# ---- 8. embed's memory is linear in the text; pictures refuse texts past a stated limit ----

def peak_rss_kib(args, stdin_text):
    """Runs attn and returns (exit code, its own peak resident memory in KiB)."""
    proc = subprocess.Popen([ATTN, *map(str, args)], stdin=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    proc.stdin.write(stdin_text.encode())
    proc.stdin.close()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, usage.ru_maxrss


def test_embed_memory_grows_linearly_with_the_text(tmp_path):
    sentence = "the river bank is muddy and the money is in the bank of england today "
    short, long = sentence * 100, sentence * 400  # 1,500 and 6,000 tokens
    code_short, rss_short = peak_rss_kib(["embed", "-o", tmp_path / "a.txt", "-"], short)
    code_long, rss_long = peak_rss_kib(["embed", "-o", tmp_path / "b.txt", "-"], long)
    assert code_short == 0 and code_long == 0
    # Three N × N float matrices at N = 6,000 are 432 MB (7× the short run's peak); linear
    # memory keeps the long run within twice the short one's.
    assert rss_long < 2 * rss_short, (rss_short, rss_long)


@pytest.mark.parametrize("command", [["heatmap", "-o", "h.svg"], ["explain"]])
def test_pictures_refuse_texts_past_the_limit(tmp_path, attn, command):
    text = "the bank " * 501  # 1,002 tokens
    r = attn(*[tmp_path / c if c.endswith(".svg") else c for c in command], "-", stdin=text)
    assert r.code == 1 and "the limit is 1000" in one_error_line(r)
    assert not (tmp_path / "h.svg").exists()


def test_a_nan_written_into_a_checkpoint_is_named(stopped_run, attn):
    args, checkpoint = stopped_run
    b = checkpoint.read_bytes()
    n = struct.unpack("<Q", b[MAGIC:MAGIC + 8])[0]
    head = json.loads(b[MAGIC + 8:MAGIC + 8 + n])
    head["header"]["progress"]["loss_sum"] = float("nan")  # Python writes the literal NaN
    text = json.dumps(head).encode()
    checkpoint.write_bytes(b[:MAGIC] + struct.pack("<Q", len(text)) + text + b[MAGIC + 8 + n:])
    r = attn(*args, "--resume")
    assert r.code == 2
    line = one_error_line(r)
    assert "is not valid JSON" in line and '"loss_sum": NaN' in line


def test_output_to_dev_stdout_writes_through(tmp_path, qkv):
    out = tmp_path / "out.npy"
    with open(out, "wb") as f:
        r = subprocess.run([ATTN, "sdpa", "--query", qkv, "--key", qkv, "--value", qkv,
                            "-o", "/dev/stdout"], stdout=f, stderr=subprocess.PIPE, timeout=60)
    assert r.returncode == 0, r.stderr
    assert np.load(out).shape == (1, 2, 5, 4)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.npy", "q.npy"]
