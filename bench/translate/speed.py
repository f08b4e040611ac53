#!/usr/bin/env python3
"""bench/translate/speed.py: translation speed of attn against its PyTorch twin on the same trained
weights (issue #54's translation-speed target), from one run with interleaved rounds.

  bench/translate/speed.py --model de-en.safetensors --sources multi30k/val.de [--sentences 100]
      [--rounds 3] [--attn build/bin/attn] [--attn before=/path/to/older/attn] [--json]

What it does, in a temporary folder:
  1. The first --sentences lines of --sources; their pieces (`attn tokenize --model M --ids`) and the
     piece table, so the twin reads the same ids.
  2. Each round: every attn binary (`--attn NAME=PATH`, repeatable; a bare path is named "attn")
     runs `attn translate --batch` at beam 1 and 5, on 1 and 2 threads, the whole command timed
     (loading the model included); then the twin (bench/peers/torch_translator.py speed: attn's
     weights loaded into nn.Transformer, its own cached greedy and beam loops, one sentence at a
     time) times the same four.
  3. Medians over the rounds; the share of beam-5 translations where attn and the twin wrote the
     same text (the same weights: they should mostly agree; float sums in another order can tip
     a close choice).
bench/translate/run.py measures speed on models each trained for its budget, so the two write
translations of different lengths; here both decode one model.
"""
import argparse
import json
import os
import statistics
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PEERS = os.path.join(REPO, "bench", "peers")
sys.path.insert(0, os.path.join(REPO, "bench"))
from measure import ensure_openblas, run_measured  # noqa: E402

CONFIGS = [(beam, threads) for threads in (1, 2) for beam in (1, 5)]


def fail(what, why):
    print(f"error: {what}: {why}", file=sys.stderr)
    sys.exit(2)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True, help="a trained attn translation model")
    p.add_argument("--sources", required=True, help="source sentences, one a line")
    p.add_argument("--sentences", type=int, default=100)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--attn", action="append", default=[], help="PATH or NAME=PATH (repeatable)")
    p.add_argument("--python", default="/usr/bin/python3", help="the Python with PyTorch (Debian's)")
    p.add_argument("--json", action="store_true", help="only the JSON line")
    a = p.parse_args()
    if a.sentences < 1 or a.rounds < 1:
        p.error("--sentences and --rounds must be at least 1")
    binaries = []
    for spec in a.attn or [os.path.join(REPO, "build", "bin", "attn")]:
        name, _, path = spec.rpartition("=")
        binaries.append((name or "attn", path))
    for _, path in binaries:
        if not os.path.isfile(path):
            fail(path, "no attn binary (run make build)")
    for path in (a.model, a.sources):
        if not os.path.isfile(path):
            fail(path, "no such file")
    blas = ensure_openblas()

    with tempfile.TemporaryDirectory(prefix="translate-speed-") as work:
        def f(name):
            return os.path.join(work, name)

        with open(a.sources, encoding="utf-8") as src:
            subset = [line.rstrip("\n") for line in src][:a.sentences]
        if any(not line.strip() for line in subset):
            fail(a.sources, "an empty line among the first --sentences (the twin skips them; attn does not)")
        with open(f("speed.src"), "w", encoding="utf-8") as out:
            out.writelines(line + "\n" for line in subset)
        attn0 = binaries[0][1]
        ids = run_measured([attn0, "tokenize", "--model", a.model, "--ids", "--data", f("speed.src")])[0]
        with open(f("speed.ids"), "w", encoding="utf-8") as out:
            out.write(ids)
        table = run_measured([attn0, "tokenize", "--model", a.model, "--vocabulary"])[0]
        with open(f("pieces.txt"), "w", encoding="utf-8") as out:
            out.write(table)

        runs = {name: {f"beam{b}_threads{t}": [] for b, t in CONFIGS} for name, _ in binaries + [("twin", "")]}
        made = {}
        for _ in range(a.rounds):
            for name, path in binaries:
                for beam, threads in CONFIGS:
                    hyp = f(f"{name}.b{beam}.t{threads}.txt")
                    _, _, rss, seconds = run_measured([path, "translate", "--model", a.model, "--batch", f("speed.src"),
                                                       "--beam", str(beam), "--threads", str(threads), "-o", hyp])
                    made.setdefault(name, {})
                    if beam not in made[name]:  # pieces made (+ </s> each), counted once
                        pieces = run_measured([path, "tokenize", "--model", a.model, "--ids", "--data", hyp])[0]
                        made[name][beam] = sum(len(line.split()) + 1 for line in pieces.split("\n")[:-1])
                    runs[name][f"beam{beam}_threads{threads}"].append(
                        {"sentences_per_second": len(subset) / seconds,
                         "target_tokens_per_second": made[name][beam] / seconds, "peak_rss_mb": rss})
            out, _, rss, _ = run_measured([a.python, os.path.join(PEERS, "torch_translator.py"), "speed",
                                           "--model", a.model, "--sources", f("speed.ids"), "--vocabulary",
                                           f("pieces.txt"), "--sentences", str(a.sentences), "--beam", "5",
                                           "--out", f("twin.b5.txt")])
            twin = json.loads(out.splitlines()[-1])
            for key, rounds in twin["speed"].items():
                runs["twin"][key] += [{**r, "peak_rss_mb": rss} for r in rounds]
            torch_version = twin["torch"]

        def lines(path):
            with open(path, encoding="utf-8") as fh:
                return fh.read().split("\n")[:-1]

        twin_lines = lines(f("twin.b5.txt"))
        agree = {name: sum(x == y for x, y in zip(lines(f(f"{name}.b5.t1.txt")), twin_lines)) / len(subset)
                 for name, _ in binaries}

    medians = {name: {key: {m: statistics.median(r[m] for r in rounds) for m in rounds[0]}
                      for key, rounds in per.items()} for name, per in runs.items()}
    result = {"model": a.model, "sources": a.sources, "sentences": len(subset), "rounds": a.rounds,
              "twin_openblas_core": blas, "torch": torch_version, "median": medians, "runs": runs,
              "beam5_same_text_as_twin": agree}
    print(json.dumps(result))
    if a.json:
        return
    print(f"\n{len(subset)} sentences, medians of {a.rounds} interleaved rounds (sentences/s):", file=sys.stderr)
    print("  " + " ".join(f"{k:>16}" for k in [""] + [f"beam{b}_threads{t}" for b, t in CONFIGS]), file=sys.stderr)
    for name in medians:
        row = [f"{medians[name][f'beam{b}_threads{t}']['sentences_per_second']:16.1f}" for b, t in CONFIGS]
        print(f"  {name:>16} " + " ".join(row), file=sys.stderr)


if __name__ == "__main__":
    main()
