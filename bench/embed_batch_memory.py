#!/usr/bin/env python3
"""Memory over a long `attn embed --batch` run (issue #7): 100,000 sentences of words from the
default vectors, the records read from a pipe as attn streams them, and attn's resident memory
(VmRSS, from /proc) sampled after 1,000 records and every 10,000 after that. Flat means the last
sample is within a few hundred KiB of the one at 1,000.

    /usr/bin/python3 bench/embed_batch_memory.py build/bin/attn [SENTENCES]

Prints a table and a last line `growth after 1000: N KiB`; exits 1 when that exceeds 1 MiB."""
import os
import random
import struct
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def vocabulary(limit=20000):
    with open(os.path.join(ROOT, "data", "glove-6b-100d-50k.attnvec"), "rb") as f:
        data = f.read()
    count, _dim, offset, size = struct.unpack_from("<QQQQ", data, 16)
    return data[offset:offset + size].decode("utf-8").split("\n")[:min(count, limit)]


def rss_kib(pid, field="VmRSS"):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {field} for {pid}")


def main():
    attn = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "bin", "attn")
    total = int(sys.argv[2]) if len(sys.argv) > 2 else 100_000
    rng = random.Random(7)
    words = vocabulary()
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        for _ in range(total):
            f.write(" ".join(rng.choice(words) for _ in range(rng.randint(3, 30))) + "\n")
        sentences = f.name
    try:
        start = time.perf_counter()
        proc = subprocess.Popen([attn, "embed", "--batch", sentences, "--format", "json"],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        marks = {1000} | set(range(10_000, total, 10_000)) | {total - 1000}
        samples = []
        for n, _line in enumerate(proc.stdout, start=1):
            if n in marks:
                samples.append((n, rss_kib(proc.pid), rss_kib(proc.pid, "VmHWM")))
        code = proc.wait()
        elapsed = time.perf_counter() - start
    finally:
        os.unlink(sentences)
    if code != 0:
        sys.exit(f"attn exited with {code}")
    print(f"{total} sentences in {elapsed:.1f} s ({total / elapsed:.0f} per second)")
    print(f"{'records':>8} {'VmRSS KiB':>10} {'VmHWM KiB':>10}")
    for n, rss, hwm in samples:
        print(f"{n:>8} {rss:>10} {hwm:>10}")
    growth = samples[-1][1] - samples[0][1]
    print(f"growth after 1000: {growth} KiB")
    sys.exit(0 if growth <= 1024 else 1)


if __name__ == "__main__":
    main()
