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


def best_openblas_core():
    """The OpenBLAS kernel set this CPU's flags allow. OpenBLAS picks its kernels from the CPU's
    family and model; a virtual CPU that names itself only "Intel(R) Xeon(R) Processor" (this
    project's machines) is taken for a Prescott, SSE3 only: measured 59 GFLOP/s on a 2048 × 256
    × 1024 product on 2 threads, against 214 as SkylakeX and 260 as Cooperlake on the same
    machine. The twin is then a peer of the machine's detection, not of PyTorch."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = set(next((l.split(":", 1)[1].split() for l in f if l.startswith("flags")), []))
    except OSError:
        return None
    if {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= flags:
        return "Cooperlake" if "avx512_bf16" in flags else "SkylakeX"
    if {"avx2", "fma"} <= flags:
        return "Haswell"
    return None


def ensure_openblas():
    """Debian's PyTorch multiplies through the system BLAS; with only the reference BLAS it is
    about 10x slower than it can be. OpenBLAS makes the twin a fair peer, with the kernels the
    CPU allows (OPENBLAS_CORETYPE, unless set already: best_openblas_core). Returns the kernel
    set named, for the benchmark's record."""
    if not os.path.exists("/usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3"):
        if os.geteuid() == 0:
            subprocess.run("apt-get install -y -qq libopenblas0-pthread >/dev/null 2>&1 || (apt-get update -qq "
                           "&& apt-get install -y -qq libopenblas0-pthread) >/dev/null 2>&1", shell=True)
        if not os.path.exists("/usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3"):
            sys.exit("error: the PyTorch twin needs OpenBLAS (apt-get install libopenblas0-pthread)")
    core = best_openblas_core()
    if "OPENBLAS_CORETYPE" not in os.environ:
        if core is not None:
            os.environ["OPENBLAS_CORETYPE"] = core  # the twins run as children: they inherit it
    elif core is not None and os.environ["OPENBLAS_CORETYPE"].lower() != core.lower():
        # Kept, as asked; but a machine's environment may set it for its own reasons (one of ours
        # set Haswell on an AVX-512 Zen 5: the float32 translator twin ran 1,819 tokens/s
        # there, 2,233 as Cooperlake): say so.
        print(f"note: OPENBLAS_CORETYPE={os.environ['OPENBLAS_CORETYPE']} from the environment; this CPU "
              f"allows {core} (unset it for the twin's best kernels)", file=sys.stderr)
    return os.environ.get("OPENBLAS_CORETYPE", "detected by OpenBLAS")
