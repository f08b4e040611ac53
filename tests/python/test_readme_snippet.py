"""The README's "Weights from PyTorch" snippet, run as it stands there, and the file it writes
loaded by the Python module and by the CLI, each matching the PyTorch module it came from."""
import os
import re
import subprocess

import numpy as np
import pytest

attn = pytest.importorskip("attn")
torch = pytest.importorskip("torch")

from torch_reference import REL, make_mha, rel_error

README = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "LIBRARY.md")  # moved from the README
MARKER = "<!-- tests/python/test_readme_snippet.py runs the next block as it stands -->"


def snippet():
    text = open(README, encoding="utf-8").read()
    assert MARKER in text, "docs/LIBRARY.md lost the snippet's marker"
    match = re.search(r"```python\n(.*?)```", text[text.index(MARKER):], re.S)
    return match.group(1)


def run_snippet(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    namespace = {}
    exec(compile(snippet(), "README.md", "exec"), namespace)
    return namespace


def torch_forward(m, x):
    with torch.no_grad():
        return m.double()(*(torch.from_numpy(x).double(),) * 3, need_weights=False)[0].numpy()


def test_the_snippet_saves_what_attn_loads(tmp_path, monkeypatch):
    ns = run_snippet(tmp_path, monkeypatch)
    path = tmp_path / "mha.safetensors"
    assert path.exists()
    x = np.random.default_rng(0).standard_normal((2, 5, 64)).astype(np.float32)
    layer = attn.MultiheadAttention.from_safetensors(path, 8)
    assert rel_error(layer(x), torch_forward(ns["mha"], x)) < REL


@pytest.mark.parametrize("kwargs", [{}, {"bias": False}, {"kdim": 3, "vdim": 5}])
def test_snippet_function_on_trained_like_modules(tmp_path, monkeypatch, kwargs):
    # Non-zero biases (a trained module's), no bias, and separate projections (kdim/vdim).
    save = run_snippet(tmp_path, monkeypatch)["save_safetensors"]
    m = make_mha(16, 4, **kwargs)
    save(m, tmp_path / "trained.safetensors")
    layer = attn.MultiheadAttention.from_safetensors(tmp_path / "trained.safetensors", 4)
    rng = np.random.default_rng(1)
    q = rng.standard_normal((2, 3, 16)).astype(np.float32)
    k = rng.standard_normal((2, 4, kwargs.get("kdim", 16))).astype(np.float32)
    v = rng.standard_normal((2, 4, kwargs.get("vdim", 16))).astype(np.float32)
    with torch.no_grad():
        want = m.double()(*(torch.from_numpy(a).double() for a in (q, k, v)))[0].numpy()
    assert rel_error(layer(q, k, v), want) < REL


def test_the_cli_loads_the_snippets_file(tmp_path, monkeypatch):
    binary = os.environ.get("ATTN_BIN") and os.path.abspath(os.environ["ATTN_BIN"])
    if not binary:
        pytest.skip("ATTN_BIN not set (the CLI is not built)")
    ns = run_snippet(tmp_path, monkeypatch)
    x = np.random.default_rng(2).standard_normal((2, 5, 64)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    r = subprocess.run([binary, "mha", "--weights", "mha.safetensors", "--heads", "8", "--query",
                        "x.npy", "-o", "y.npy"], cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert rel_error(np.load(tmp_path / "y.npy"), torch_forward(ns["mha"], x)) < REL
