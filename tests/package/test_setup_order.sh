#!/usr/bin/env bash
# The README's set-up in its own order: `make demo` configures first, on a fresh machine before
# scripts/deps.sh has installed pybind11; `make test` configures the same tree again after. The
# second configure must build the Python module as a first configure with pybind11 would (a
# cached "OFF" from the first left python_module, python_types and python_wheel unregistered while
# the suite still passed). Emulated here by pointing the first configure at no Python at all.
#   test_setup_order.sh SOURCE_DIR WORK_DIR
set -euo pipefail
src=$1
work=$2
rm -rf "$work"
mkdir -p "$work"
flags=(-DCMAKE_BUILD_TYPE=Release -DATTN_MPI=OFF -DATTN_INSTALL=OFF)

echo "== first configure: no Python to build the module for (as before scripts/deps.sh)"
cmake -S "$src" -B "$work/build" "${flags[@]}" -DATTN_PYTHON_EXECUTABLE="$work/no-python3" >"$work/first.log" 2>&1 ||
  { cat "$work/first.log"; exit 1; }
cmake --build "$work/build" --target help >"$work/targets.txt"
if grep -q attn_python "$work/targets.txt"; then
  echo "the first configure found a Python module to build without a Python"; exit 1
fi

echo "== second configure of the same tree, Python there (as \`make test\` after \`make demo\`)"
cmake -S "$src" -B "$work/build" -DATTN_PYTHON_EXECUTABLE= >"$work/second.log" 2>&1 ||
  { cat "$work/second.log"; exit 1; }
cmake --build "$work/build" --target help >"$work/targets.txt"
if ! grep -q attn_python "$work/targets.txt"; then
  echo "the second configure left the Python module out:"; grep -i python "$work/second.log"; exit 1
fi
if ! grep -q "python_module" "$work/build/tests/CTestTestfile.cmake"; then
  echo "the second configure did not register python_module"; exit 1
fi

echo "== asked for the module (ON, as \`make build\` asks), with no Python: configure fails"
if cmake -S "$src" -B "$work/on" "${flags[@]}" -DATTN_BUILD_PYTHON=ON \
     -DATTN_PYTHON_EXECUTABLE="$work/no-python3" >"$work/on.log" 2>&1; then
  echo "ATTN_BUILD_PYTHON=ON configured without a Python"; exit 1
fi
grep -q "ATTN_BUILD_PYTHON is ON, but" "$work/on.log" || { cat "$work/on.log"; exit 1; }
rm -rf "$work"
echo "ok"
