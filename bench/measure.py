"""What the benchmarks that run attn against a PyTorch twin share: a command timed with its peak
memory, and OpenBLAS under Debian's PyTorch (bench/lm/run.py, bench/translate/run.py)."""
import os
import subprocess
import sys
import tempfile
import time


def run_measured(command, cwd=None):
    """Runs a command; returns (stdout, stderr, peak RSS MB, seconds), RSS from wait4."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as o, tempfile.TemporaryFile() as e:
        p = subprocess.Popen(command, stdout=o, stderr=e, cwd=cwd)
        _, status, usage = os.wait4(p.pid, 0)
        seconds = time.perf_counter() - start
        o.seek(0)
        e.seek(0)
        out, err = o.read().decode(), e.read().decode()
    if status != 0:
        sys.exit(f"error: {' '.join(map(str, command))} failed:\n{err[-2000:]}")
    return out, err, usage.ru_maxrss / 1024, seconds


def ensure_openblas():
    """Debian's PyTorch multiplies through the system BLAS; with only the reference BLAS it is
    about 10x slower than it can be. OpenBLAS makes the twin a fair peer."""
    if os.path.exists("/usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3"):
        return
    if os.geteuid() == 0:
        subprocess.run("apt-get install -y -qq libopenblas0-pthread >/dev/null 2>&1 || (apt-get update -qq "
                       "&& apt-get install -y -qq libopenblas0-pthread) >/dev/null 2>&1", shell=True)
    if not os.path.exists("/usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3"):
        sys.exit("error: the PyTorch twin needs OpenBLAS (apt-get install libopenblas0-pthread)")
