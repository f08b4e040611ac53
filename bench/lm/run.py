#!/usr/bin/env python3
"""bench/lm: attn's language model (--task lm) against its peers, from one run on one corpus slice
and the same tokens (issue #28; docs/LM.md holds the table).

  bench/lm/run.py --corpus BOOK.txt [--budget 300] [--markdown docs/LM.md]

What it does, in order, in a temporary folder:
  1. The corpus's non-blank lines (paragraphs; .xz/.gz read by attn) are split: every --held-every-th
     paragraph is held out (held.txt), the rest trains (train.txt).
  2. The machine's float32 FMA peak (attn bench --peak), for the model FLOPs utilisation.
  3. attn: `attn train --task lm --data train.txt --time BUDGET` with the defaults (+ --attn-args),
     then `attn eval` on held.txt. Training tokens/s is attn's own epoch figure. Each --variant
     NAME=ARGS trains once more with ARGS added (e.g. 'bf16=--dtype bf16'), on the same text and budget.
  4. The tokens both peers read: `attn tokenize --model <attn's model>` of train.txt and held.txt,
     so the vocabulary (the most frequent training words, <unk>, <eos>) and every id are attn's.
  5. The PyTorch twin (bench/peers/torch_lm.py: the same network, initialisation rule, optimiser
     and schedule, PyTorch 1.13 with --threads threads) for the same wall-clock budget; held-out
     perplexity the same way.
  6. Interpolated Kneser–Ney (bench/peers/kneser_ney.py), orders 3 and 5, on train.txt with the
     same vocabulary size; held-out perplexity on held.txt.
  7. Generation (--generate-model, default builtin-lm, whose context is 512): attn generate
     --temperature 0 --max-words 510 --timings (tokens/s, ms per token at positions 10 and 500)
     against the twin's own cached loop on the same weights.
  8. Peak memory (maximum resident set) of each command, from the kernel's accounting (wait4).
MFU as nanoGPT reports it: (6·N + 12·L·E·T) FLOPs per token × tokens/s ÷ the FMA peak measured in the
same run (N: the parameters, the tied embedding rows included since the output multiplies by them;
L layers, E width, T context).
"""
import argparse
import datetime
import json
import math
import os
import platform
import re
import struct
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PEERS = os.path.join(REPO, "bench", "peers")
sys.path.insert(0, os.path.join(REPO, "bench"))
from measure import ensure_openblas, run_measured  # noqa: E402


def model_shape(path):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
    meta = header.pop("__metadata__")
    params = sum(math.prod(v["shape"]) for k, v in header.items() if k != "position.weight")
    return json.loads(meta["config"]), params, len(json.loads(meta["outputs"]))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--corpus", required=True)
    p.add_argument("--budget", type=float, default=300, help="training seconds for attn and the twin each")
    p.add_argument("--held-every", type=int, default=10)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--attn", default=os.path.join(REPO, "build", "bin", "attn"))
    p.add_argument("--python", default="/usr/bin/python3", help="the Python with PyTorch (Debian's)")
    p.add_argument("--attn-args", default="", help="extra options for attn train")
    p.add_argument("--variant", action="append", default=[], metavar="NAME=ARGS",
                   help="also train attn with these extra options (same text and budget), e.g. 'bf16=--dtype bf16'")
    p.add_argument("--generate-model", default="builtin-lm")
    p.add_argument("--generate-weights", default=os.path.join(REPO, "data", "lm-wikipedia.safetensors"),
                   help="the same model as a file, for the twin's generation")
    p.add_argument("--kn-orders", default="3,5")
    p.add_argument("--json", action="store_true")
    a = p.parse_args()
    blas = ensure_openblas()
    attn = os.path.abspath(a.attn)
    threads = ["--threads", str(a.threads)]
    with tempfile.TemporaryDirectory(prefix="bench-lm-") as work:
        train, held = os.path.join(work, "train.txt"), os.path.join(work, "held.txt")
        lines = []
        text = subprocess.run(["xzcat" if a.corpus.endswith(".xz") else "cat", a.corpus], capture_output=True).stdout
        for line in text.decode("utf-8").splitlines():
            if line.strip():
                lines.append(line)
        with open(train, "w") as t, open(held, "w") as h:
            for i, line in enumerate(lines):
                (h if i % a.held_every == 0 else t).write(line + "\n")
        r = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
             "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
             "commit": subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip(),
             "corpus": os.path.basename(a.corpus), "paragraphs": len(lines), "budget_s": a.budget, "twin_openblas_core": blas}
        peak = json.loads(run_measured([attn, "bench", "--peak", "--json", "--reps", "1", *threads, "1,16,1,16"])[0].splitlines()[0])
        r["fma_peak_gflops"] = peak["peak_gflops"]
        # attn, then each variant (the same training text and budget, other options)
        def train_attn(name, extra):
            model = os.path.join(work, name + ".safetensors")
            _, err, rss, secs = run_measured([attn, "train", "--task", "lm", "--data", train, "--time", f"{a.budget}s",
                                              "-o", model, *threads, *a.attn_args.split(), *extra.split()])
            speeds = [float(m) for m in re.findall(r"([0-9.]+) tokens/s  [0-9.]+ s", err)]
            trained = int(re.search(r"(\d+) tokens trained on", err).group(1))
            ev = json.loads(run_measured([attn, "eval", "--model", model, "--data", held, *threads])[0])
            config, params, vocab = model_shape(model)
            flops_per_token = 6 * params + 12 * config["layers"] * config["dim"] * config["max_positions"]
            tps = sorted(speeds)[len(speeds) // 2] if speeds else trained / a.budget
            return model, {"tokens_per_second": tps, "trained_tokens": trained, "perplexity": ev["perplexity"],
                           "test_tokens": ev["tokens"], "unknown_share": ev["unknown_share"], "peak_rss_mb": rss,
                           "wall_s": secs, "parameters": params, "vocab": vocab, "flops_per_token": flops_per_token,
                           "mfu": flops_per_token * tps / (peak["peak_gflops"] * 1e9), "options": extra}

        model, r["attn"] = train_attn("attn", "")
        flops_per_token, vocab = r["attn"]["flops_per_token"], r["attn"]["vocab"]
        r["variants"] = {}
        for spec in a.variant:
            name, _, extra = spec.partition("=")
            r["variants"][name] = train_attn(f"variant{len(r['variants'])}", extra)[1]
        # the same tokens for the peers
        tokens = {}
        for name, path in [("train", train), ("held", held)]:
            tokens[name] = os.path.join(work, name + ".tokens")
            with open(tokens[name], "w") as f:
                f.write(run_measured([attn, "tokenize", "--model", model, "--data", path])[0])
        vectors = os.path.join(REPO, "data", "glove-6b-100d-50k.attnvec")
        out, _, rss, secs = run_measured([a.python, os.path.join(PEERS, "torch_lm.py"), "train", "--model", model,
                                          "--train", tokens["train"], "--test", tokens["held"], "--vectors", vectors,
                                          "--seconds", str(a.budget), "--threads", str(a.threads)])
        twin = json.loads(out.splitlines()[-1])
        twin["peak_rss_mb"] = rss
        twin["mfu"] = flops_per_token * twin["tokens_per_second"] / (peak["peak_gflops"] * 1e9)
        r["twin"] = twin
        r["kneser_ney"] = {}
        for order in a.kn_orders.split(","):
            out, _, rss, secs = run_measured([a.python, os.path.join(PEERS, "kneser_ney.py"), "--train", train, "--test", held,
                                              "--order", order, "--vocab", str(vocab - 2),
                                              "--python-module", os.path.join(REPO, "build", "python")])
            kn = json.loads(out.splitlines()[-1])
            kn["peak_rss_mb"] = rss
            r["kneser_ney"][order] = kn
        # generation
        _, err, rss, secs = run_measured([attn, "generate", "--model", a.generate_model, "--temperature", "0",
                                          "--max-words", "510", "--ignore-eos", "--timings", *threads])
        timing = json.loads(err.strip().splitlines()[-1])
        timing["peak_rss_mb"] = rss
        r["generate_attn"] = timing
        out, _, rss, secs = run_measured([a.python, os.path.join(PEERS, "torch_lm.py"), "generate", "--model",
                                          a.generate_weights, "--words", "510", "--threads", str(a.threads)])
        tg = json.loads(out.splitlines()[-1])
        tg.pop("tokens", None)
        tg["peak_rss_mb"] = rss
        r["generate_twin"] = tg
    print(json.dumps(r))
    at, tw = r["attn"], r["twin"]
    print(f"\ntraining ({a.budget:.0f} s each, {r['corpus']}, {r['paragraphs']} paragraphs, FMA peak {r['fma_peak_gflops']:.0f} GFLOP/s):")
    print(f"  attn : {at['tokens_per_second']:.0f} tokens/s, MFU {100 * at['mfu']:.1f}%, held-out perplexity {at['perplexity']:.1f}, peak {at['peak_rss_mb']:.0f} MB")
    print(f"  twin : {tw['tokens_per_second']:.0f} tokens/s, MFU {100 * tw['mfu']:.1f}%, held-out perplexity {tw['perplexity']:.1f}, peak {tw['peak_rss_mb']:.0f} MB")
    print(f"  speed-up {at['tokens_per_second'] / tw['tokens_per_second']:.2f}x")
    for name, v in r["variants"].items():
        print(f"  attn {name} ({v['options']}): {v['tokens_per_second']:.0f} tokens/s, MFU {100 * v['mfu']:.1f}%, "
              f"held-out perplexity {v['perplexity']:.1f}, peak {v['peak_rss_mb']:.0f} MB, "
              f"{v['tokens_per_second'] / tw['tokens_per_second']:.2f}x the twin")
    for order, kn in r["kneser_ney"].items():
        print(f"  Kneser-Ney {order}-gram: held-out perplexity {kn['perplexity']:.1f}")
    ga, gt = r["generate_attn"], r["generate_twin"]
    print(f"generation: attn {ga['tokens_per_second']:.0f} tokens/s ({ga['ms_per_token_at']}), twin {gt['words_per_second']:.0f} ({gt['ms_per_word_at']})")


if __name__ == "__main__":
    main()
