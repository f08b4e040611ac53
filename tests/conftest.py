"""Shared pytest fixtures: the attn binary, running it, and small file writers."""
import json
import os
import struct
import subprocess
import sys

import numpy as np
import pytest

ATTN = os.environ.get("ATTN_BIN") or os.path.join(
    os.path.dirname(__file__), "..", "build", "bin", "attn")
# The built-in context model's width (scripts/make_builtin_context_model.py: GloVe's 100).
BUILTIN_WIDTH = 100


class Result:
    def __init__(self, proc):
        self.code = proc.returncode
        self.out = proc.stdout.decode("utf-8", "replace") if isinstance(proc.stdout, bytes) else proc.stdout
        self.err = proc.stderr.decode("utf-8", "replace")
        self.raw = proc.stdout


def run_attn(*args, stdin=None, env=None):
    """Runs attn with the arguments; returns code, stdout (text), stderr."""
    proc = subprocess.run([ATTN, *map(str, args)], input=stdin.encode() if isinstance(stdin, str) else stdin,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120, env=env)
    return Result(proc)


@pytest.fixture
def attn():
    if not os.path.exists(ATTN):
        pytest.fail(f"attn binary not found at {ATTN} (build first, or set ATTN_BIN)")
    return run_attn


def write_safetensors(path, tensors, metadata=None):
    """A minimal safetensors writer (float32), so the tests need no extra package."""
    header, blobs, offset = {}, [], 0
    for name in sorted(tensors):
        a = np.ascontiguousarray(tensors[name], dtype="<f4")
        blob = a.tobytes()
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    if metadata:
        header["__metadata__"] = metadata
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for blob in blobs:
            f.write(blob)


def read_attnvec(path):
    """Reads an .attnvec file (layout in src/io/attnvec_format.hpp) into (words, float64 matrix)."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"ATTNVEC1"
    version, dtype, count, dim, words_offset, words_bytes, vectors_offset = struct.unpack_from("<IIQQQQQ", data, 8)
    words = data[words_offset:words_offset + words_bytes].decode("utf-8").split("\n")[:count]
    np_dtype = "<f4" if dtype == 1 else "<f2"
    values = np.frombuffer(data, dtype=np_dtype, count=count * dim, offset=vectors_offset)
    return words, values.reshape(count, dim).astype(np.float64)


def one_error_line(result):
    """The stderr of a failed run: exactly one 'error: …' line (a usage hint may follow)."""
    lines = [l for l in result.err.splitlines() if l.strip()]
    errors = [l for l in lines if l.startswith("error: ")]
    assert len(errors) == 1, result.err
    assert lines[0] == errors[0], result.err
    return errors[0]


# A suite that was asked for a module must fail, not shrink: `pytest.importorskip` skips a whole
# file when its module is missing, and a run of skips passes. ctest sets ATTN_REQUIRE_IMPORTS=1
# (the build it tests has the Python module, and scripts/deps.sh installed numpy and torch), so
# there a file skipped for a missing import fails the session, naming the file and the module.
_skipped_imports = []


def pytest_collectreport(report):
    if report.skipped:
        reason = str(report.longrepr[-1]) if isinstance(report.longrepr, tuple) else str(report.longrepr)
        if "could not import" in reason:
            _skipped_imports.append(f"{report.nodeid}: {reason}")


def pytest_sessionfinish(session, exitstatus):
    if _skipped_imports and os.environ.get("ATTN_REQUIRE_IMPORTS") == "1" and exitstatus == 0:
        for line in _skipped_imports:
            print(f"\nerror: skipped for a missing module, which this suite requires: {line}",
                  file=sys.stderr)
        session.exitstatus = 1
