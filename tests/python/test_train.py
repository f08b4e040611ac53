"""attn.train (issue #31): the CLI's options, defaults and model file from Python (the same bytes
as attn train with the same seed, for a classifier and a language model), progress to a
callback, a stop from the callback (as Ctrl-C) that keeps the checkpoint for resume=True, the
CLI's errors; TextModel.save."""
import os
import subprocess

import pytest

attn = pytest.importorskip("attn")

DATA = os.path.join(os.path.dirname(__file__), "..", "data")
ATTN = os.environ.get("ATTN_BIN") or os.path.join(os.path.dirname(__file__), "..", "..", "build", "bin", "attn")
NEGATION = os.path.join(DATA, "negation_train.tsv")


def cli(*args):
    r = subprocess.run([ATTN, *map(str, args)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    words = "the cat dog bird sat ran on near by mat road barn garden .".split()
    lines = [" ".join(words[(i * 7 + j * 3) % len(words)] for j in range(9)) for i in range(300)]
    path = tmp_path_factory.mktemp("corpus") / "corpus.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_classifier_is_the_file_attn_train_writes(tmp_path):
    events = []
    model = attn.train(NEGATION, task="classify", epochs=2, seed=1, output=tmp_path / "py.safetensors",
                       callback=events.append)
    cli("train", "--task", "classify", "--data", NEGATION, "--epochs", 2, "--seed", 1, "-o", tmp_path / "cli.safetensors")
    assert (tmp_path / "py.safetensors").read_bytes() == (tmp_path / "cli.safetensors").read_bytes()
    assert model.task == "classify" and sorted(model.labels) == ["negative", "positive"]
    kinds = [e["kind"] for e in events]
    assert kinds.count("epoch") == 2 and kinds.count("step") > 2 and kinds[-1] == "epoch"
    assert events[-1]["epoch"] == 2 and 0 <= events[-1]["accuracy"] <= 1


def test_a_language_model_takes_the_tasks_defaults_as_the_cli_does(corpus, tmp_path):
    options = dict(layers=1, context=16, batch=8, epochs=2, seed=1, eval_steps=5)
    events = []
    attn.train(corpus, task="lm", output=tmp_path / "py.safetensors", callback=events.append, **options)
    cli("train", "--task", "lm", "--data", corpus, "--layers", 1, "--context", 16, "--batch", 8, "--epochs", 2,
        "--seed", 1, "--eval-steps", 5, "-o", tmp_path / "cli.safetensors")
    assert (tmp_path / "py.safetensors").read_bytes() == (tmp_path / "cli.safetensors").read_bytes()
    assert not os.path.exists(str(tmp_path / "py.safetensors") + ".checkpoint")  # done: removed
    scores = [e for e in events if e["kind"] == "eval"]
    assert scores and all(e["step"] % 5 == 0 and e["loss"] > 0 for e in scores)


def test_save_steps_writes_the_clis_snapshots_and_reports_them(corpus, tmp_path):
    options = dict(layers=1, context=16, batch=8, epochs=2, seed=1, eval_steps=5)
    events = []
    attn.train(corpus, task="lm", output=tmp_path / "py.safetensors", callback=events.append, save_steps=10, **options)
    cli("train", "--task", "lm", "--data", corpus, "--layers", 1, "--context", 16, "--batch", 8, "--epochs", 2,
        "--seed", 1, "--eval-steps", 5, "--save-steps", 10, "-o", tmp_path / "cli.safetensors")
    snapshots = [e for e in events if e["kind"] == "snapshot"]
    assert len(snapshots) >= 2 and [e["step"] for e in snapshots] == list(range(10, 10 * len(snapshots) + 1, 10))
    for e in snapshots:
        assert e["path"] == str(tmp_path / f"py.step{e['step']}.safetensors")
        assert open(e["path"], "rb").read() == (tmp_path / f"cli.step{e['step']}.safetensors").read_bytes()
    assert sorted(p.name for p in tmp_path.glob("py.step*")) == sorted(os.path.basename(e["path"]) for e in snapshots)
    assert (tmp_path / "py.safetensors").read_bytes() == (tmp_path / "cli.safetensors").read_bytes()
    assert attn.TextModel.load(snapshots[0]["path"]).task == "lm"


def test_an_adaptive_softmax_is_the_clis(corpus, tmp_path):
    options = dict(layers=1, context=16, batch=8, epochs=1, seed=1, adaptive_softmax=[3, 8], progress=False)
    model = attn.train(corpus, task="lm", output=tmp_path / "py.safetensors", **options)
    cli("train", "--task", "lm", "--data", corpus, "--layers", 1, "--context", 16, "--batch", 8, "--epochs", 1,
        "--seed", 1, "--adaptive-softmax", "3,8", "-o", tmp_path / "cli.safetensors")
    assert (tmp_path / "py.safetensors").read_bytes() == (tmp_path / "cli.safetensors").read_bytes()
    assert model.generate("the", max_words=4, temperature=0).strip()  # the continuation


def test_masked_word_group_by_length_max_tokens_drop_final_stop_and_packing_are_the_clis(tmp_path):
    words = "the cat dog bird sat ran on near by mat road barn garden".split()
    lines = [" ".join(words[(i * 5 + j) % len(words)] for j in range(3 + i % 10)) + " ." for i in range(400)]
    data = tmp_path / "varied.txt"
    data.write_text("\n".join(lines) + "\n")
    attn.train(data, task="masked-word", layers=1, batch=8, seed=3, group_by_length=True, max_tokens=2000,
               output=tmp_path / "py.safetensors", progress=False)
    cli("train", "--task", "masked-word", "--data", data, "--layers", 1, "--batch", 8, "--seed", 3,
        "--group-by-length", "--max-tokens", 2000, "-o", tmp_path / "cli.safetensors")
    assert (tmp_path / "py.safetensors").read_bytes() == (tmp_path / "cli.safetensors").read_bytes()
    cli("train", "--task", "masked-word", "--data", data, "--layers", 1, "--batch", 8, "--seed", 3,
        "--max-tokens", 2000, "-o", tmp_path / "plain.safetensors")
    assert (tmp_path / "plain.safetensors").read_bytes() != (tmp_path / "cli.safetensors").read_bytes()
    # drop_final_stop: the CLI's --drop-final-stop, another model than the whole sentences'.
    attn.train(data, task="masked-word", layers=1, batch=8, seed=3, drop_final_stop=0.5, max_tokens=2000,
               output=tmp_path / "py-stops.safetensors", progress=False)
    cli("train", "--task", "masked-word", "--data", data, "--layers", 1, "--batch", 8, "--seed", 3,
        "--drop-final-stop", 0.5, "--max-tokens", 2000, "-o", tmp_path / "cli-stops.safetensors")
    assert (tmp_path / "py-stops.safetensors").read_bytes() == (tmp_path / "cli-stops.safetensors").read_bytes()
    assert (tmp_path / "cli-stops.safetensors").read_bytes() != (tmp_path / "plain.safetensors").read_bytes()
    # pack_sentences: the CLI's --pack-sentences, another model than the single sentences'.
    attn.train(data, task="masked-word", layers=1, batch=8, seed=3, pack_sentences=True, max_tokens=2000,
               output=tmp_path / "py-packed.safetensors", progress=False)
    cli("train", "--task", "masked-word", "--data", data, "--layers", 1, "--batch", 8, "--seed", 3,
        "--pack-sentences", "--max-tokens", 2000, "-o", tmp_path / "cli-packed.safetensors")
    assert (tmp_path / "py-packed.safetensors").read_bytes() == (tmp_path / "cli-packed.safetensors").read_bytes()
    assert (tmp_path / "cli-packed.safetensors").read_bytes() != (tmp_path / "plain.safetensors").read_bytes()


def test_a_stop_keeps_the_checkpoint_and_resume_gives_the_uninterrupted_file(corpus, tmp_path):
    options = dict(task="masked-word", layers=1, epochs=2, seed=2, checkpoint_steps=3, progress=False)
    whole = tmp_path / "whole.safetensors"
    attn.train(corpus, output=whole, **options)

    def interrupt_at_step_7(event):  # as Ctrl-C arriving during step 7
        if event["kind"] == "step" and event["epoch"] == 1 and event["step"] == 7:
            raise KeyboardInterrupt

    part = tmp_path / "part.safetensors"
    with pytest.raises(KeyboardInterrupt):
        attn.train(corpus, output=part, callback=interrupt_at_step_7, **options)
    assert not part.exists() and os.path.exists(str(part) + ".checkpoint")
    attn.train(corpus, output=part, resume=True, **options)
    assert part.read_bytes() == whole.read_bytes()


@pytest.mark.parametrize("options, error, words", [
    (dict(epochz=1), attn.UsageError, "unknown option 'epochz'"),
    (dict(epochs="two"), attn.UsageError, "option epochs takes an integer"),
    (dict(task="regress"), attn.UsageError, "task 'regress'"),
    (dict(task="classify", max_tokens=5), attn.UsageError, "max_tokens is for task='masked-word' and 'lm'"),
    (dict(task="classify", resume=True), attn.InputError, "no checkpoint to resume from"),
    (dict(task="classify", dtype="bf16"), attn.UsageError, "dtype is for task='masked-word', 'lm' and 'translate'"),
    (dict(task="lm", dtype="float16"), attn.UsageError, "dtype='float16': expected 'float32' or 'bf16'"),
    (dict(task="classify", adaptive_softmax=[2]), attn.UsageError, "adaptive_softmax is for task='masked-word' and 'lm'"),
    (dict(task="lm", adaptive_softmax="2,5"), attn.UsageError, "option adaptive_softmax takes a list of integers"),
    (dict(learn_embeddings=8, vectors="v.txt"), attn.UsageError, "exclude each other"),
    (dict(task="lm", resume=True), attn.InputError, "no checkpoint to resume from"),
    (dict(task="lm", eval_steps=5, save_steps=5), attn.UsageError, "save_steps writes the model beside output"),
    (dict(task="classify", save_steps=5), attn.UsageError, "save_steps is for task='masked-word', 'lm' and 'translate'"),
    (dict(task="classify", device="cuda"), attn.UsageError, "device is for task='masked-word' and 'lm'"),
    (dict(task="lm", device="gpu"), attn.UsageError, "device='gpu': expected 'cpu' or 'cuda'"),
])
def test_errors_are_the_clis(options, error, words, tmp_path):
    with pytest.raises(error) as caught:
        attn.train(NEGATION if options.get("task") == "classify" else os.path.join(DATA, "seed003_toy.txt"),
                   progress=False, **options)
    assert words in str(caught.value)


def test_device_cuda_needs_a_cuda_build_and_a_gpu_and_says_so(tmp_path):
    """device='cuda' trains on the GPU where attn was built with CUDA and a GPU answers (checked
    by tests/cuda/test_train_cuda.py there); elsewhere, as here, one usage error and no file."""
    out = tmp_path / "m.safetensors"
    try:
        attn.train(os.path.join(DATA, "seed003_toy.txt"), task="lm", learn_embeddings=8, device="cuda",
                   output=str(out), progress=False)
    except attn.UsageError as e:
        assert "-DATTN_CUDA=ON" in str(e) or "no CUDA device" in str(e)
        assert not out.exists()
        return
    pytest.skip("this build trains on a GPU here")


def test_a_missing_corpus_is_an_input_error_naming_it():
    with pytest.raises(attn.InputError) as caught:
        attn.train("no-such-corpus.txt", progress=False)
    assert caught.value.file == "no-such-corpus.txt"


def test_save_writes_what_load_reads(tmp_path):
    m = attn.TextModel.load("builtin")
    m.save(tmp_path / "copy.safetensors")
    again = attn.TextModel.load(str(tmp_path / "copy.safetensors"))
    assert again.predict("he sat on the [MASK] of the river .") == m.predict("he sat on the [MASK] of the river .")
    with pytest.raises(attn.InputError):
        m.save(tmp_path / "no-such-folder" / "x.safetensors")
    assert os.listdir(tmp_path) == ["copy.safetensors"]


def test_ctrl_c_stops_the_run_and_keeps_the_checkpoint(corpus, tmp_path):
    """A real SIGINT, as Ctrl-C sends it: KeyboardInterrupt after the step, the checkpoint kept,
    no model file."""
    import signal
    import sys
    import time
    out = tmp_path / "m.safetensors"
    script = f"""
import attn, sys
def started(event):
    if event["kind"] == "step" and event["step"] == 2 and event["epoch"] == 1:
        print("running", flush=True)
try:
    attn.train({str(corpus)!r}, task="masked-word", layers=1, epochs=1000, seed=2, checkpoint_steps=1,
               output={str(out)!r}, callback=started)
except KeyboardInterrupt:
    print("interrupted", flush=True)
    sys.exit(3)
"""
    env = dict(os.environ)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)
    assert proc.stdout.readline().strip() == "running"
    time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 3 and "interrupted" in stdout, stderr
    assert "resume=True" in stderr
    assert not out.exists() and os.path.exists(str(out) + ".checkpoint")


def test_an_output_folder_that_does_not_exist_fails_before_training(tmp_path):
    events = []
    with pytest.raises(attn.InputError) as caught:
        attn.train(NEGATION, task="classify", output=tmp_path / "missing" / "m.safetensors", callback=events.append)
    assert "no folder" in str(caught.value) and events == []
