"""Issue #52, items 2, 3, 5, 10 and 18, through the Python module: a damaged model file raises
attn.InputError (never kills the interpreter), an array too large to copy raises MemoryError, the
training API runs the CLI's file-roles check and option ranges, takes array-likes and threads,
and every function has a signature. Cases that crashed the old module run in a child process."""
import inspect
import json
import os
import random
import struct
import subprocess
import sys

import numpy as np
import pytest

attn = pytest.importorskip("attn")


def in_child(code):
    """Runs code in a fresh interpreter with the same attn; (returncode, stdout, stderr)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    # Under an 8 GiB address-space limit, so that no copy the test provokes can take the machine.
    prelude = "import resource\nresource.setrlimit(resource.RLIMIT_AS, (8 << 30, 8 << 30))\nimport numpy as np, attn\n"
    proc = subprocess.run([sys.executable, "-c", prelude + code], capture_output=True,
                          text=True, timeout=300, env=env)
    return proc.returncode, proc.stdout, proc.stderr


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    r = random.Random(0)
    words = "the cat dog sat ran on under mat road river bank and then a old small".split()
    path = tmp_path_factory.mktemp("corpus") / "corpus.txt"
    path.write_text("".join(" ".join(r.choice(words) for _ in range(12)) + " .\n" for _ in range(200)))
    return path


@pytest.fixture(scope="module")
def lm_file(corpus, tmp_path_factory):
    out = tmp_path_factory.mktemp("lm") / "lm.safetensors"
    attn.train(str(corpus), task="lm", output=str(out), layers=1, context=8, batch=8, epochs=1, min_count=1,
               progress=False)
    return out


def edited(src, dst, config=None, weight=None):
    """src with config fields changed, or weight 3 of its first matrix set to `weight`."""
    b = open(src, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    head, data = json.loads(b[8:8 + n]), bytearray(b[8 + n:])
    name = None
    if config:
        c = json.loads(head["__metadata__"]["config"])
        c.update(config)
        head["__metadata__"]["config"] = json.dumps(c)
    if weight is not None:
        name = next(k for k in sorted(head) if k != "__metadata__" and len(head[k]["shape"]) == 2)
        at = head[name]["data_offsets"][0] + 12
        data[at:at + 4] = np.float32(weight).tobytes()
    text = json.dumps(head).encode()
    text += b" " * (-len(text) % 8)
    open(dst, "wb").write(struct.pack("<Q", len(text)) + text + bytes(data))
    return dst, name


# ---- item 2: config fields checked at load ----

@pytest.mark.parametrize("field, value", [("max_positions", 0), ("max_positions", -1), ("heads", 0),
                                          ("dim", "x"), ("hidden", 10**12), ("window", -1)])
def test_a_damaged_config_raises_input_error_at_load(lm_file, tmp_path, field, value):
    bad, _ = edited(lm_file, tmp_path / "m.safetensors", config={field: value})
    code, out, err = in_child(f"""
try:
    m = attn.TextModel.load({str(bad)!r})
    m.predict("the cat")
    m.generate("the cat", max_words=3)
    print("loaded")
except attn.InputError as e:
    print("InputError:", e)
""")
    assert code == 0, (code, err)  # not killed by a signal
    assert out.startswith("InputError:") and f"'{field}'" in out, out


# ---- item 10: non-finite weights ----

@pytest.mark.parametrize("value", [np.nan, np.inf])
def test_non_finite_weights_raise_input_error_naming_the_tensor(lm_file, tmp_path, value):
    bad, name = edited(lm_file, tmp_path / "m.safetensors", weight=value)
    with pytest.raises(attn.InputError) as caught:
        attn.TextModel.load(str(bad))
    assert f"tensor '{name}' holds a non-finite value" in str(caught.value)
    assert caught.value.where == "element 3"


# ---- item 3: an input too large to copy ----

@pytest.mark.parametrize("call", [
    "attn.sdpa(big, big, big)",
    "attn.sdpa(small, small, small, attn_mask=np.broadcast_to(np.zeros((1, 1, 1, 1), np.float32), (1, 1, 2**31, 1024)))",
    "attn.MultiheadAttention.from_state_dict(state, 4)(big[0])",
])
def test_an_input_too_large_to_copy_raises_memory_error(call):
    # A broadcast view of 2^31 × 64 float32 (512 GiB if copied): nothing is allocated by the test.
    code, out, err = in_child("""
big = np.broadcast_to(np.zeros((1, 1, 1, 64), np.float32), (1, 1, 2**31, 64))[:, :, :, ::-1]
small = np.zeros((1, 1, 4, 64), np.float32)
state = {"in_proj_weight": np.zeros((192, 64), np.float32), "in_proj_bias": np.zeros(192, np.float32),
         "out_proj.weight": np.zeros((64, 64), np.float32), "out_proj.bias": np.zeros(64, np.float32)}
try:
    CALL
except MemoryError:
    print("MemoryError")
except (attn.Error, TypeError) as e:
    print(type(e).__name__, str(e).splitlines()[0])
""".replace("CALL", call))
    assert code == 0, (code, err)
    assert out.strip() == "MemoryError", out


# ---- item 5: the CLI's file roles and option ranges ----

def test_train_refuses_an_output_that_is_its_training_file(tmp_path):
    data = tmp_path / "data.txt"
    data.write_text("the cat sat on the mat .\n" * 50)
    before = data.read_bytes()
    link = tmp_path / "link.txt"
    link.symlink_to(data)
    for kwargs in ({"output": str(data)}, {"output": str(link)}, {"output": tmp_path / "." / "data.txt"}):
        with pytest.raises(attn.UsageError) as caught:
            attn.train(str(data), task="next-word", epochs=1, progress=False, **kwargs)
        assert "would overwrite data, an input" in str(caught.value), caught.value
        assert data.read_bytes() == before
    # A checkpoint is an output too (masked-word, lm).
    with pytest.raises(attn.UsageError) as caught:
        attn.train(str(data), task="lm", output=str(tmp_path / "m.safetensors"), checkpoint=str(link), progress=False)
    assert "checkpoint would overwrite data" in str(caught.value)
    assert data.read_bytes() == before


def test_train_refuses_a_training_file_named_like_a_snapshot(tmp_path):
    # save_steps writes OUTPUT.stepN.safetensors: a training file of that name is an input.
    data = tmp_path / "m.step2.safetensors"
    data.write_text("the cat sat on the mat .\n" * 200)
    before = data.read_bytes()
    with pytest.raises(attn.UsageError) as caught:
        attn.train(str(data), task="lm", output=str(tmp_path / "m.safetensors"), save_steps=2, layers=1,
                   epochs=1, progress=False)
    assert "would overwrite data, an input" in str(caught.value), caught.value
    assert data.read_bytes() == before
    assert not (tmp_path / "m.safetensors").exists()


@pytest.mark.parametrize("options", [{"time": 0}, {"time": -5}, {"time": float("nan")}, {"vocab": True},
                                     {"vocab": 0}, {"heads": 0}, {"dropout": 0.99}, {"lr": 0},
                                     {"batch": -1}, {"warmup": 2.0}, {"threads": -1}, {"threads": 5000},
                                     {"context": 0},
                                     {"adaptive_softmax": [0, 10]}])
def test_train_holds_options_to_the_clis_ranges(tmp_path, options):
    data = tmp_path / "data.txt"
    data.write_text("the cat sat on the mat .\n" * 50)
    with pytest.raises(attn.UsageError) as caught:
        attn.train(str(data), task="lm", output=str(tmp_path / "m.safetensors"), progress=False, **options)
    assert next(iter(options)) in str(caught.value), caught.value
    assert not (tmp_path / "m.safetensors").exists()


def test_generate_holds_temperature_to_the_clis_range(lm_file):
    m = attn.TextModel.load(str(lm_file))
    with pytest.raises(attn.UsageError, match="temperature"):
        m.generate("the cat", temperature=1e9)


# ---- item 18: array-likes, threads, signatures, generate's text, no score as None ----

class ArrayLike:
    """What a CPU torch tensor offers NumPy (__array__), with a repr too long to print."""

    def __init__(self, a, fail=False):
        self.a, self.fail = a, fail

    def __array__(self, dtype=None, copy=None):
        if self.fail:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad.")
        return self.a

    def __repr__(self):
        return "tensor(" + "0.0, " * 100000 + ")"


def test_sdpa_takes_array_likes_and_fails_in_one_line():
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((1, 2, 5, 8)).astype(np.float32) for _ in range(3))
    np.testing.assert_array_equal(attn.sdpa(ArrayLike(q), ArrayLike(k), ArrayLike(v)), attn.sdpa(q, k, v))
    with pytest.raises(Exception) as caught:
        attn.sdpa(ArrayLike(q, fail=True), k, v)
    message = str(caught.value)
    assert "requires grad" in message and len(message) < 300, message[:300]
    with pytest.raises(TypeError) as caught:
        attn.sdpa(object(), k, v)
    assert len(str(caught.value)) < 300 and "q must be" in str(caught.value), str(caught.value)[:300]


def test_train_takes_threads_and_reports_no_score_as_none(corpus, tmp_path):
    events = []
    m = attn.train(str(corpus), task="lm", layers=1, context=8, batch=8, epochs=1, min_count=1, threads=1,
                   callback=events.append)
    epochs = [e for e in events if e["kind"] == "epoch"]
    assert epochs
    for e in epochs + m.history["epochs"]:
        if not e["on_validation"]:
            assert e["eval_loss"] is None and e["accuracy"] is None, e
        else:
            assert isinstance(e["eval_loss"], float), e


def test_a_classifier_without_validation_still_reports_its_training_accuracy(tmp_path):
    data = tmp_path / "data.tsv"
    data.write_text("".join(f"{l}\tthe movie was {w}\n" for l, w in [("pos", "good"), ("neg", "bad")] * 20))
    m = attn.train(str(data), task="classify", epochs=2, progress=False)
    assert all(isinstance(e["accuracy"], float) for e in m.history["epochs"])


@pytest.mark.parametrize("function, names", [
    ("sdpa", ["q", "k", "v", "causal", "scale", "attn_mask", "need_weights", "dtype", "device"]),
    ("train", ["data", "task", "output", "vectors", "callback", "progress", "kwargs"]),
    ("tokenize", ["text"]),
    ("embed", ["text", "vectors", "scale", "strict", "model"]),
    ("TextModel.load", ["path"]),
    ("TextModel.predict", ["self", "text", "k"]),
    ("TextModel.generate", ["self", "prompt", "max_words", "temperature", "top_k", "top_p", "seed", "ignore_eos",
                            "beam", "n_best", "length_penalty"]),
    ("TextModel.evaluate", ["self", "path", "every", "seed"]),
    ("Vectors.load", ["path"]),
    ("Vectors.nearest", ["self", "vector", "k"]),
    ("MultiheadAttention.from_safetensors", ["path", "num_heads"]),
    ("MultiheadAttention.__call__", ["self", "query", "key", "value", "causal", "key_padding_mask", "attn_mask",
                                     "need_weights", "average_attn_weights", "dtype", "device"]),
])
def test_every_function_has_a_signature(function, names):
    target = attn
    for part in function.split("."):
        target = getattr(target, part)
    signature = inspect.signature(target)
    assert list(signature.parameters) == names, signature


def test_signatures_carry_defaults_and_keyword_only_parameters():
    p = inspect.signature(attn.sdpa).parameters
    assert p["causal"].kind is inspect.Parameter.KEYWORD_ONLY and p["causal"].default is False
    assert p["scale"].default is None and p["dtype"].default == "float32"
    assert inspect.signature(attn.TextModel.predict).parameters["k"].default == 5


def test_generate_returns_the_continuation_after_the_prompt_as_documented(lm_file):
    m = attn.TextModel.load(str(lm_file))
    doc = m.generate.__doc__
    assert "without the prompt" in doc and "prompt + m.generate(prompt)" in doc
    text = m.generate("the cat", max_words=5, temperature=0)
    assert not text.startswith("the cat")
