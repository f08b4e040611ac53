#!/usr/bin/env python3
"""Does masking slow attention down? (issue #7: 90% of keys masked must run no slower than 1.5×
unmasked; a kernel whose exp produced subnormals for the masked scores could be several times
slower). Times attn.sdpa through the Python module, the median of R runs interleaved round-robin after a
warm-up round, for:
no mask; a mask of zeros (the mask's own cost); 90% of the keys of each row masked at random, with
-inf and with -FLT_MAX; 90% masked as a contiguous block (whole key tiles, which are skipped).
Each masked result is checked against NumPy first.

    PYTHONPATH=build/python /usr/bin/python3 bench/masked_speed.py [B,H,N,D] [R]

Exits 1 when a 90% case is slower than 1.5× the unmasked run."""
import statistics
import sys
import time

import numpy as np

import attn


def interleaved_medians(fns, reps):
    """Median seconds of each function, run round-robin (one warm-up round first), so that a
    change in machine load affects every case alike."""
    times = [[] for _ in fns]
    for rep in range(reps + 1):
        for i, fn in enumerate(fns):
            t = time.perf_counter()
            fn()
            if rep > 0:
                times[i].append(time.perf_counter() - t)
    return [statistics.median(t) for t in times]


def numpy_sdpa(q, k, v, mask):
    s = q.astype(np.float64) @ np.swapaxes(k, -1, -2).astype(np.float64) / np.sqrt(q.shape[-1]) + mask
    s -= s.max(axis=-1, keepdims=True)
    p = np.exp(s)
    return (p / p.sum(axis=-1, keepdims=True)) @ v.astype(np.float64)


def main():
    B, H, N, D = map(int, (sys.argv[1] if len(sys.argv) > 1 else "1,8,1024,64").split(","))
    reps = int(sys.argv[2]) if len(sys.argv) > 2 else 15
    rng = np.random.default_rng(5)
    q, k, v = (rng.standard_normal((B, H, N, D), dtype=np.float32) for _ in range(3))
    lowest = np.finfo(np.float32).min
    keep = rng.random((N, N)) >= 0.9
    keep[np.arange(N), rng.integers(0, N, N)] = True  # every row keeps at least one key
    scattered_inf = np.where(keep, 0, -np.inf).astype(np.float32)
    scattered_lowest = np.where(keep, 0, lowest).astype(np.float32)
    block = np.full((N, N), -np.inf, dtype=np.float32)
    block[:, : max(1, N // 10)] = 0
    cases = [("no mask", None), ("mask of zeros", np.zeros((N, N), dtype=np.float32)),
             ("90% scattered, -inf", scattered_inf), ("90% scattered, -FLT_MAX", scattered_lowest),
             ("90% as one block, -inf", block)]

    for name, mask in cases:
        if mask is not None:
            want = numpy_sdpa(q[:1, :1], k[:1, :1], v[:1, :1], mask)
            got = attn.sdpa(q[:1, :1], k[:1, :1], v[:1, :1], attn_mask=mask)
            err = float(np.abs(got - want).max())
            if err > 1e-4:
                sys.exit(f"{name}: wrong result (max error {err:.2e})")
    medians = interleaved_medians(
        [lambda m=mask: attn.sdpa(q, k, v, attn_mask=m) for _, mask in cases], reps)

    print(f"attn.sdpa [B, H, N, D] = [{B}, {H}, {N}, {D}], median of {reps} interleaved runs")
    print(f"{'case':<26} {'median ms':>10} {'× no mask':>10}")
    worst = 0.0
    for (name, _), t in zip(cases, medians):
        ratio = t / medians[0]
        if name.startswith("90%"):
            worst = max(worst, ratio)
        print(f"{name:<26} {t * 1e3:>10.2f} {ratio:>10.2f}")
    print(f"worst 90% case: {worst:.2f}× no mask (limit 1.5×)")
    sys.exit(0 if worst <= 1.5 else 1)


if __name__ == "__main__":
    main()
