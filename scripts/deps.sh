#!/usr/bin/env bash
# Installs the Debian 12 packages that attn's build, demo and tests use.
# As root it installs whatever is missing; otherwise it prints the exact apt-get line to run.
#   scripts/deps.sh          everything: the build, the Python module, MPI, the tests' tools
#   scripts/deps.sh demo     only what `make demo` compiles and runs: the library and the CLI
set -euo pipefail

# The library and the command line tool: all `make demo` needs.
demo_packages=(
  g++ cmake make pkg-config          # toolchain (C++20, CMake >= 3.25)
  binutils                           # nm, objdump: tests/cli/test_source_rules.py reads the kernels' objects
  libcli11-dev                       # command-line parsing
  nlohmann-json3-dev                 # JSON output and safetensors headers
  libfmt-dev                         # formatting (g++ 12 has no <format>)
  liblzma-dev zlib1g-dev             # corpora read compressed (.xz, .gz)
  libsentencepiece-dev               # subword pieces (translation, a cased language model)
)
packages=(
  g++ cmake make pkg-config          # toolchain (C++20, CMake >= 3.25)
  binutils                           # nm, objdump: tests/cli/test_source_rules.py reads the kernels' objects
  libomp-dev                         # OpenMP (g++ brings libgomp; kept for clang builds)
  libcli11-dev                       # command-line parsing
  nlohmann-json3-dev                 # JSON output and safetensors headers
  libfmt-dev                         # formatting (g++ 12 has no <format>)
  liblzma-dev zlib1g-dev             # corpora read compressed (.xz, .gz)
  libsentencepiece-dev               # subword pieces (translation, a cased language model)
  libgtest-dev libgmock-dev          # unit tests
  python3 python3-numpy python3-torch python3-pytest   # oracle tests against PyTorch
  pybind11-dev python3-dev           # the Python module
  python3-pip python3-setuptools python3-wheel python3-venv mypy   # pip install ., its test, the stubs' check
  libopenmpi-dev openmpi-bin         # attn-mpi (ring attention across ranks) and its tests
  eslint                             # lints the page's JavaScript, which node (its dependency) tests
)
# Wanted, not needed: the HTML heatmap tests render pages in headless Chromium and are skipped
# without it, so a machine where it cannot be installed still builds and tests.
optional=(chromium)

if [ "${1:-}" = "demo" ]; then
  packages=("${demo_packages[@]}")
  optional=()
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

optional_missing=()
for p in "${optional[@]+"${optional[@]}"}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    optional_missing+=("$p")
  fi
done
if [ ${#optional_missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ]; then
    echo "deps: installing ${optional_missing[*]} (optional)" >&2
    (export DEBIAN_FRONTEND=noninteractive
     apt-get install -y -q --no-install-recommends "${optional_missing[@]}" >&2 ||
       { apt-get update -q >&2 && apt-get install -y -q --no-install-recommends \
           "${optional_missing[@]}" >&2; }) ||
      echo "deps: could not install ${optional_missing[*]}; the tests that need it are skipped" >&2
  else
    echo "deps: optional, for the HTML heatmap tests: apt-get install -y ${optional_missing[*]}" >&2
  fi
fi

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "attn needs these Debian packages; run as root:" >&2
  echo "  apt-get install -y ${missing[*]}" >&2
  exit 1
fi

echo "deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >&2
apt-get install -y -q --no-install-recommends "${missing[@]}" >&2
