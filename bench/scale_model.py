#!/usr/bin/env python3
"""The ring-attention scaling model of docs/SCALE.md: from one rank's measured kernel rate and a
network's bandwidth and latency, the time of a ring step's compute and transfer for K ranks, whether
the compute hides the transfer, and the longest sequence that fits a given memory per rank.

  python3 bench/scale_model.py --gflops 201 --merge-ns 0.29 --cores 1 --gbit 100 --latency-us 2 \
      --memory-gib 1 --heads 8 --head-size 64 --tokens 1048576

--gflops is the rate of one core's fused kernel on a rank's blocks (attn-mpi bench's
step_compute_s gives it: 4·H·n²·D per step over n = N/K rows) and --merge-ns the merge's cost per
output element and step (step_merge_s over H·n·D); a rank of --cores cores is assumed to run
both that many times faster. The network's figures are assumptions to state."""
import argparse


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--gflops", type=float, required=True, help="one core's kernel rate, GFLOP/s")
    p.add_argument("--merge-ns", type=float, default=0.0, help="merge cost per output element and step, ns (one core)")
    p.add_argument("--cores", type=int, default=1, help="cores per rank (ideal speed-up assumed)")
    p.add_argument("--gbit", type=float, default=100.0, help="link bandwidth, Gb/s")
    p.add_argument("--latency-us", type=float, default=2.0, help="message latency, µs")
    p.add_argument("--memory-gib", type=float, default=1.0, help="memory per rank, GiB")
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--head-size", type=int, default=64)
    p.add_argument("--tokens", type=int, default=1 << 20, help="N for the strong-scaling table")
    p.add_argument("--causal", action="store_true", help="half the work per step, same transfer")
    p.add_argument("--train-line-ms", type=float, default=0.0,
                   help="training: one core's gradient time per line (0: no training table)")
    p.add_argument("--train-lines", type=int, default=16, help="training: lines per rank and step")
    p.add_argument("--shard-kb", type=float, default=249.0, help="training: bytes of one shard, KB")
    p.add_argument("--sum-us", type=float, default=13.0, help="training: µs to add one shard")
    a = p.parse_args()
    F, bw, lat = a.gflops * 1e9 * a.cores, a.gbit * 1e9 / 8, a.latency_us * 1e-6
    merge = a.merge_ns * 1e-9 / a.cores
    H, D = a.heads, a.head_size
    work = 0.5 if a.causal else 1.0
    # Bytes a rank holds per local row (B = 1, Hkv = H, Dv = D): q, k, v, the two K/V buffers
    # (block in hand, block arriving), the merge's double accumulators, a block's output and the
    # float32 result: 4·H·D·(1 + 1 + 1 + 4 + 1 + 1) + 8·H·(D + 1) ≈ 44·H·D.
    row_bytes = 4 * H * D * 9 + 8 * H * (D + 1)
    # The compute hides the transfer when 4·H·n²·D·work / F ≥ 8·H·n·D / bw (+ latency):
    # n ≥ 2·F / (work · bw) rows per rank, whatever H and D.
    n_hidden = 2 * F / (work * bw)
    print(f"kernel {a.gflops:g} GFLOP/s per core × {a.cores} cores per rank, merge {a.merge_ns:g} ns per element, link {a.gbit:g} Gb/s, latency {a.latency_us:g} µs, "
          f"{a.memory_gib:g} GiB per rank, H={H}, D={D}{', causal' if a.causal else ''}")
    print(f"bytes per local row: {row_bytes}; the ring hides the transfer from n = N/K ≥ {n_hidden:.0f} rows")
    print()
    print(f"strong scaling, N = {a.tokens}:")
    print(f"{'K':>6} {'n=N/K':>9} {'compute/step':>13} {'transfer/step':>14} {'hidden':>7} "
          f"{'total':>10} {'speed-up':>9}")
    one = 4 * H * a.tokens ** 2 * D * work / F + merge * H * a.tokens * D
    K = 2
    while K <= 1024:
        n = a.tokens / K
        t_c = 4 * H * n * n * D * work / F + merge * H * n * D
        t_x = lat + 8 * H * n * D / bw
        total = K * max(t_c, t_x)
        print(f"{K:>6} {n:>9.0f} {t_c * 1e3:>11.2f}ms {t_x * 1e3:>12.3f}ms {'yes' if t_c >= t_x else 'NO':>7} "
              f"{total:>9.2f}s {one / total:>9.1f}")
        K *= 2
    print()
    print(f"longest sequence in {a.memory_gib:g} GiB per rank (weak scaling):")
    print(f"{'K':>6} {'N':>13} {'compute/step':>13} {'transfer/step':>14} {'total':>11}")
    n = a.memory_gib * 2 ** 30 / row_bytes
    K = 2
    while K <= 1024:
        t_c = 4 * H * n * n * D * work / F + merge * H * n * D
        t_x = lat + 8 * H * n * D / bw
        total = K * max(t_c, t_x)
        print(f"{K:>6} {K * n:>13.0f} {t_c:>12.2f}s {t_x * 1e3:>12.2f}ms {total / 3600:>10.2f}h")
        K *= 4
    print()
    if a.train_line_ms > 0:
        train_model(a, bw, lat)


def train_model(a, bw, lat):
    """Data-parallel training (attn-mpi train): every step each rank computes the gradients of its
    --train-lines lines (on one core: --train-line-ms per line, divided by --cores), then every
    rank receives every other rank's shard (an all-gather: the shards are summed in shard order,
    so every rank needs all of them; K − 1 shards of --shard-kb each, with log2 K latencies) and
    sums the K shards (--sum-us per shard)."""
    import math
    compute = a.train_lines * a.train_line_ms * 1e-3 / a.cores
    shard = a.shard_kb * 1e3
    one = a.train_line_ms * 1e-3 / a.cores  # one rank alone: seconds per line, no exchange
    print(f"data-parallel training: {a.train_lines} lines per rank and step, {a.train_line_ms:g} ms per line "
          f"on one core (× {a.cores} cores), shards of {a.shard_kb:g} KB, {a.sum_us:g} µs to add one")
    print(f"{'K':>6} {'compute/step':>13} {'exchange/step':>14} {'sum/step':>9} {'lines/s':>10} {'speed-up':>9} {'efficiency':>11}")
    K = 2
    while K <= 1024:
        exchange = math.ceil(math.log2(K)) * lat + (K - 1) * shard / bw
        summing = K * a.sum_us * 1e-6
        step = compute + exchange + summing
        rate = K * a.train_lines / step
        print(f"{K:>6} {compute * 1e3:>11.2f}ms {exchange * 1e3:>12.2f}ms {summing * 1e3:>7.2f}ms "
              f"{rate:>10.0f} {rate * one:>9.1f} {rate * one / K:>10.0%}")
        K *= 2
    print()


if __name__ == "__main__":
    main()
