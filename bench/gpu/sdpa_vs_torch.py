"""attn's CUDA sdpa against PyTorch's scaled_dot_product_attention on the same GPU, in the same
run: bf16, forward and forward+backward, the issue's shapes, full and causal. Times are medians
of CUDA-event-timed calls after warm-up, queued back to back (the GPU's time, not the host's);
inputs rotate among three sets so that no run reads another's cache. TFLOP/s count 4·B·H·N²·D (half when causal), ×3.5 with the backward.

  python3 bench/gpu/sdpa_vs_torch.py [--reps 20] [--json OUT.jsonl]

Needs libattn_cuda.so (cmake -DATTN_CUDA=ON; ATTN_CUDA_LIB names another)."""
import argparse
import json
import os
import statistics
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tests", "cuda"))
import attn_cuda  # noqa: E402

SHAPES = [(1, 4096, 16, 128), (4, 2048, 16, 64), (8, 1024, 32, 128)]


def median_ms(fn, reps, sets):
    """The median of `reps` calls, each between its own pair of CUDA events, the calls queued
    back to back with no wait between them: what is timed is the GPU's work, not the host's
    (Python, ctypes, allocation) before each launch, which overlaps the previous call's kernels.
    (Waiting after each call instead timed the host's work too: tens of microseconds a call,
    5% of a half-millisecond forward.)"""
    for i in range(3):
        fn(sets[i % len(sets)])
    torch.cuda.synchronize()
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(reps)]
    for r, (a, b) in enumerate(events):
        a.record()
        fn(sets[r % len(sets)])
        b.record()
    torch.cuda.synchronize()
    return statistics.median(a.elapsed_time(b) for a, b in events)


def torch_backends():
    """PyTorch's default choice, and each fused backend it has on its own."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    out = [("torch (default)", None)]
    for name, b in (("torch flash", SDPBackend.FLASH_ATTENTION), ("torch cudnn", SDPBackend.CUDNN_ATTENTION),
                    ("torch efficient", SDPBackend.EFFICIENT_ATTENTION)):
        out.append((name, lambda b=b: sdpa_kernel(b)))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--json")
    args = ap.parse_args()
    dev = torch.cuda.get_device_name()
    print(f"# {dev}, torch {torch.__version__}, attn forward path: {attn_cuda.forward_path(torch.bfloat16, 128, 128)}")
    rows = []
    for B, N, H, D in SHAPES:
        for causal in (False, True):
            sets = []
            for s in range(3):
                g = torch.Generator(device="cuda").manual_seed(s)
                mk = lambda: torch.randn(B, H, N, D, generator=g, device="cuda", dtype=torch.bfloat16)
                sets.append((mk(), mk(), mk(), mk()))
            flops = 4.0 * B * H * N * N * D * (0.5 if causal else 1.0)
            work = torch.empty(B * H * N, dtype=torch.float32, device="cuda")

            def attn_fwd(t):
                attn_cuda.sdpa_forward(t[0], t[1], t[2], causal=causal)

            def attn_fwd_bwd(t):
                o, lse = attn_cuda.sdpa_forward(t[0], t[1], t[2], causal=causal)
                attn_cuda.sdpa_backward(t[0], t[1], t[2], o, lse, t[3], causal=causal)

            results = {"attn": (median_ms(attn_fwd, args.reps, sets), median_ms(attn_fwd_bwd, args.reps, sets))}
            for name, ctx in torch_backends():
                def t_fwd(t):
                    F.scaled_dot_product_attention(t[0], t[1], t[2], is_causal=causal)

                grads = [(q.detach().requires_grad_(True), k.detach().requires_grad_(True),
                          v.detach().requires_grad_(True), go) for q, k, v, go in sets]

                def t_fwd_bwd(t):
                    o = F.scaled_dot_product_attention(t[0], t[1], t[2], is_causal=causal)
                    o.backward(t[3])

                try:
                    if ctx is None:
                        results[name] = (median_ms(t_fwd, args.reps, sets), median_ms(t_fwd_bwd, args.reps, grads))
                    else:
                        with ctx():
                            results[name] = (median_ms(t_fwd, args.reps, sets), median_ms(t_fwd_bwd, args.reps, grads))
                except RuntimeError as e:  # a backend that does not take this shape
                    results[name] = None
                    print(f"  ({name} on {B},{N},{H},{D}: {str(e).splitlines()[0][:100]})")
            base = results["torch (default)"]
            for name, r in results.items():
                if r is None:
                    continue
                row = {"gpu": dev, "peer": name, "B": B, "N": N, "H": H, "D": D, "causal": causal, "dtype": "bf16",
                       "fwd_ms": r[0], "fwd_tflops": flops / r[0] / 1e9, "fwd_bwd_ms": r[1],
                       "fwd_bwd_tflops": 3.5 * flops / r[1] / 1e9,
                       "fwd_vs_torch_default": base[0] / r[0], "fwd_bwd_vs_torch_default": base[1] / r[1]}
                rows.append(row)
                print(f"{B},{N},{H},{D}{' causal' if causal else '':7s} {name:16s} fwd {r[0]:8.3f} ms "
                      f"{row['fwd_tflops']:6.1f} TFLOP/s ({row['fwd_vs_torch_default']:.2f}x)   fwd+bwd {r[1]:8.3f} ms "
                      f"{row['fwd_bwd_tflops']:6.1f} TFLOP/s ({row['fwd_bwd_vs_torch_default']:.2f}x)", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            for row in rows:
                f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
