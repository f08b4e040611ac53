#!/usr/bin/env bash
# `pip install --no-build-isolation .` from a Python that lacks the wheel package (a bare venv, as
# a pyenv's python3 first on PATH gives): setup.py must say so in one line before any build,
# where setuptools used to stop with "invalid command 'bdist_wheel'" (issue #52).
#   test_pip_python.sh SOURCE_DIR WORK_DIR
set -euo pipefail
src=$1
work=$2
rm -rf "$work"
mkdir -p "$work"
cd "$work"   # not ctest's folder, whose wheel/ (python_wheel's) would import as a package
/usr/bin/python3 -m venv "$work/bare"   # no --system-site-packages: no wheel, no NumPy
if "$work/bare/bin/python" -c "import wheel" 2>/dev/null; then
  echo "the bare venv has wheel; nothing to test here"; exit 1
fi
if "$work/bare/bin/pip" install --no-build-isolation --no-index --no-deps "$src" >"$work/pip.log" 2>&1; then
  echo "pip installed without the wheel package?"; cat "$work/pip.log"; exit 1
fi
if ! grep -q "this Python has no 'wheel' package" "$work/pip.log" || grep -q "invalid command 'bdist_wheel'" "$work/pip.log"; then
  cat "$work/pip.log"; exit 1
fi
rm -rf "$work"
echo "ok"
