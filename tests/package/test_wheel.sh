#!/usr/bin/env bash
# The Python package as a pip user meets it: `pip wheel .` (offline, Debian's setuptools, reusing
# this build's CMake tree so that nothing is compiled twice), the wheel installed in a fresh
# virtual environment, and a script that imports attn from there and runs the attn command the
# wheel put on its PATH.
#   test_wheel.sh SOURCE_DIR CMAKE_BUILD_DIR WORK_DIR
set -euo pipefail
src=$1
build=$2
work=$3
python=/usr/bin/python3
rm -rf "$work"
mkdir -p "$work"

echo "== pip wheel ."
ATTN_CMAKE_BUILD_DIR="$build" "$python" -m pip wheel "$src" --no-build-isolation --no-deps --no-index \
  -w "$work/wheel" >"$work/wheel.log" 2>&1 || { cat "$work/wheel.log"; exit 1; }
wheel=$(ls "$work"/wheel/attn-*.whl)
echo "$wheel"

echo "== a fresh venv (NumPy from Debian, as --system-site-packages sees it), the wheel installed"
"$python" -m venv --system-site-packages "$work/venv"
"$work/venv/bin/python" -m pip install --no-index --no-deps "$wheel" >"$work/install.log" 2>&1 ||
  { cat "$work/install.log"; exit 1; }

echo "== a script that uses it, from elsewhere, with nothing of the build tree on its path"
cd "$work"
env -u PYTHONPATH PATH="$work/venv/bin:/usr/bin:/bin" "$work/venv/bin/python" - "$work/venv" <<'PY'
import json, os, subprocess, sys
import numpy as np
import attn
venv = sys.argv[1]
assert attn.__file__.startswith(venv), attn.__file__
tokens, rows, a = attn.embed("money bank grows")
assert tokens == ["money", "bank", "grows"] and rows.shape == (3, 100) and rows.dtype == np.float32
np.testing.assert_allclose(a.sum(1), 1, rtol=1e-6)
m = attn.TextModel.load("builtin")
top = m.predict("he sat on the [MASK] of the river .")
# The wheel carries the trained built-in model: its top 5 holds one of issue #29's river words.
assert {"bank", "banks", "shore", "edge", "side"} & {w for w, _ in top[:5]}, top
# The attn command the wheel installed, on PATH: the same numbers as the module.
cli = subprocess.run(["attn", "embed", "--format", "json", "money bank grows"], capture_output=True, text=True)
assert cli.returncode == 0, cli.stderr
assert os.path.realpath(subprocess.run(["which", "attn"], capture_output=True, text=True).stdout.strip()).startswith(venv)
np.testing.assert_allclose(np.array(json.loads(cli.stdout)["embeddings"]), rows, atol=1e-6)
bad = subprocess.run(["attn", "embed", "--format", "yaml", "x"], capture_output=True, text=True)
assert bad.returncode == 1 and bad.stderr.startswith("error:"), bad.stderr
try:
    attn.TextModel.load("missing.safetensors")
    raise SystemExit("no error")
except attn.InputError as e:
    assert e.file == "missing.safetensors" and type(e).__module__ == "attn"
print("ok:", attn.__version__, attn.__file__)
PY
