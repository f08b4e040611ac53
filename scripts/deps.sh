#!/usr/bin/env bash
# Installs the Debian 12 packages that attn's build, demo and tests use.
# As root it installs whatever is missing; otherwise it prints the exact apt-get line to run.
set -euo pipefail

packages=(
  g++ cmake make pkg-config          # toolchain (C++20, CMake >= 3.25)
  libomp-dev                         # OpenMP (g++ brings libgomp; kept for clang builds)
  libcli11-dev                       # command-line parsing
  nlohmann-json3-dev                 # JSON output and safetensors headers
  libfmt-dev                         # formatting (g++ 12 has no <format>)
  libgtest-dev libgmock-dev          # unit tests
  python3 python3-numpy python3-torch python3-pytest   # oracle tests against PyTorch
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

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
