#!/usr/bin/env bash
# The shipped type stubs (python/attn/*.pyi): a typed program passes `mypy --strict`, a wrong one
# fails, and stubtest finds every public name of the compiled module in the stubs and no name
# the module lacks.
#   check.sh PACKAGE_PARENT_DIR (build/python) [MYPY]
# Debian's mypy and python3 (the one with NumPy), not whatever comes first on PATH.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
package=$1
mypy=${2:-/usr/bin/mypy}
python=/usr/bin/python3
cache=$(mktemp -d)
trap 'rm -rf "$cache"' EXIT
echo "== mypy --strict on a program using attn"
MYPYPATH=$package "$mypy" --strict --cache-dir "$cache" "$here/uses_attn.py"
echo "== mypy rejects wrong calls"
if MYPYPATH=$package "$mypy" --strict --cache-dir "$cache" "$here/wrong.py" >"$cache/wrong.out" 2>&1; then
  echo "mypy accepted tests/typing/wrong.py"; exit 1
fi
for expected in 'Argument 1 to "load" of "TextModel"' 'Incompatible types in assignment' 'No overload variant of "embed"'; do
  grep -q "$expected" "$cache/wrong.out" || { echo "mypy did not say: $expected"; cat "$cache/wrong.out"; exit 1; }
done
echo "== stubtest: the stubs against the module"
PYTHONPATH=$package "$python" -m mypy.stubtest attn._attn --allowlist "$here/stubtest_allowlist.txt"
