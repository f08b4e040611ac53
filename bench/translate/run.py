#!/usr/bin/env python3
"""bench/translate: attn's translator (--task translate) against its PyTorch twin, from one run on
one corpus (issue #54; docs/TRANSLATE.md holds the table and the curve).

  bench/translate/run.py --data ../shared/data/multi30k [--budget 900] [--svg docs/translate-curve.svg]

What it does, in order, in a temporary folder:
  1. train.de/train.en are split: --held pairs drawn by --seed are held out (attn's --valid-source /
     --valid-target, to keep its best epoch), the rest trains both systems. val.de/val.en score them.
  2. The machine's float32 FMA peak (attn bench --peak), for the model FLOPs utilisation.
  3. attn: `attn train --task translate` with the defaults for --budget seconds (--time), writing
     its model every --curve-steps steps (--save-steps); the time each snapshot appears is noted.
     Training tokens/s and MFU are attn's own figures (its last progress line: source and target
     tokens, FLOPs by its estimate, src/train/translation_training.cpp).
  4. The pieces both read: `attn tokenize --model <attn's model> --ids` of the training split and of
     val.de, and its --vocabulary to turn the twin's ids back into text.
  5. The twin (bench/peers/torch_translator.py: the same network, initialisation rule, batches,
     optimiser and schedule; PyTorch with OpenBLAS, --threads threads) for the same budget, greedy
     translations of val.de every --curve-every seconds (its clock stopped meanwhile).
  6. BLEU and chrF (attn eval --translations: cased sacreBLEU 13a, exp smoothing; chrF2) of both at
     beam 5 (the final models) and greedy (the curve's points).
  7. Translation speed: attn translate --batch over the first --speed-sentences of val.de at beam 1
     and 5, 1 and 2 threads (sentences/s and target pieces/s, wall-clock of the whole command, the
     model's loading included), against the twin's own cached loops on the same sentences; peak
     memory (maximum resident set, wait4) of each command.
"""
import argparse
import datetime
import json
import os
import platform
import random
import re
import subprocess
import sys
import tempfile
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PEERS = os.path.join(REPO, "bench", "peers")
sys.path.insert(0, os.path.join(REPO, "bench"))
from measure import ensure_openblas, run_measured  # noqa: E402


def lines(path):
    with open(path, encoding="utf-8") as f:
        return f.read().split("\n")[:-1]


def write_lines(path, items):
    with open(path, "w", encoding="utf-8") as f:
        f.write("".join(x + "\n" for x in items))


def scores(attn, hypotheses, references):
    out = run_measured([attn, "eval", "--translations", hypotheses, "--target", references])[0]
    j = json.loads(out)
    return {"bleu": j["bleu"], "chrf": j["chrf"]}


def curve_svg(series, title):
    """A small line chart: BLEU (greedy) against training minutes, one line per system."""
    w, h, left, bottom = 560, 320, 50, 40
    xs = [x for pts in series.values() for x, _ in pts] or [1]
    ys = [y for pts in series.values() for _, y in pts] or [1]
    xmax, ymax = max(xs) * 1.05, max(5.0, max(ys) * 1.1)
    sx = lambda x: left + x / xmax * (w - left - 20)
    sy = lambda y: h - bottom - y / ymax * (h - bottom - 30)
    colours = ["#1f77b4", "#d62728", "#2ca02c"]
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">',
           f'<text x="{w / 2}" y="16" text-anchor="middle">{title}</text>',
           f'<line x1="{left}" y1="{h - bottom}" x2="{w - 10}" y2="{h - bottom}" stroke="black"/>',
           f'<line x1="{left}" y1="{h - bottom}" x2="{left}" y2="20" stroke="black"/>',
           f'<text x="{w / 2}" y="{h - 8}" text-anchor="middle">training minutes</text>',
           f'<text x="14" y="{h / 2}" transform="rotate(-90 14 {h / 2})" text-anchor="middle">valid BLEU (greedy)</text>']
    for k in range(0, int(ymax) + 1, 5 if ymax <= 50 else 10):
        out.append(f'<text x="{left - 6}" y="{sy(k) + 4:.1f}" text-anchor="end">{k}</text>')
        out.append(f'<line x1="{left}" y1="{sy(k):.1f}" x2="{w - 10}" y2="{sy(k):.1f}" stroke="#ddd"/>')
    step = max(1, int(xmax / 6))
    for k in range(0, int(xmax) + 1, step):
        out.append(f'<text x="{sx(k):.1f}" y="{h - bottom + 16}" text-anchor="middle">{k}</text>')
    for i, (name, pts) in enumerate(series.items()):
        c = colours[i % len(colours)]
        path = " ".join(f"{'M' if j == 0 else 'L'}{sx(x):.1f},{sy(y):.1f}" for j, (x, y) in enumerate(pts))
        out.append(f'<path d="{path}" fill="none" stroke="{c}" stroke-width="2"/>')
        for x, y in pts:
            out.append(f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="3" fill="{c}"><title>{name}: {y:.1f} at {x:.1f} min</title></circle>')
        out.append(f'<text x="{left + 12}" y="{40 + 16 * i}" fill="{c}">{name}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", required=True, help="a folder with train.de, train.en, val.de, val.en")
    p.add_argument("--budget", type=float, default=900, help="training seconds for attn and the twin each")
    p.add_argument("--held", type=int, default=1000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--curve-steps", type=int, default=150, help="attn's snapshot every N steps")
    p.add_argument("--curve-every", type=float, default=120, help="the twin's curve point every N seconds")
    p.add_argument("--speed-sentences", type=int, default=200)
    p.add_argument("--attn", default=os.path.join(REPO, "build", "bin", "attn"))
    p.add_argument("--python", default="/usr/bin/python3", help="the Python with PyTorch (Debian's)")
    p.add_argument("--svg", help="write the learning curve here")
    p.add_argument("--skip-twin", action="store_true")
    p.add_argument("--dtype", choices=["float32", "bf16"], default="float32",
                   help="both sides' training products: bf16 is attn --dtype bf16 against the twin under autocast")
    a = p.parse_args()
    blas = None if a.skip_twin else ensure_openblas()
    attn = os.path.abspath(a.attn)
    threads = ["--threads", str(a.threads)]
    with tempfile.TemporaryDirectory(prefix="bench-translate-") as work:
        f = lambda name: os.path.join(work, name)
        source, target = lines(os.path.join(a.data, "train.de")), lines(os.path.join(a.data, "train.en"))
        order = list(range(len(source)))
        random.Random(a.seed).shuffle(order)
        held = set(order[:a.held])
        write_lines(f("train.de"), [s for i, s in enumerate(source) if i not in held])
        write_lines(f("train.en"), [t for i, t in enumerate(target) if i not in held])
        write_lines(f("held.de"), [source[i] for i in sorted(held)])
        write_lines(f("held.en"), [target[i] for i in sorted(held)])
        val_de, val_en = os.path.join(a.data, "val.de"), os.path.join(a.data, "val.en")
        r = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
             "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
             "commit": subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"], capture_output=True,
                                      text=True).stdout.strip(),
             "train_pairs": len(source) - a.held, "held_pairs": a.held, "valid_pairs": len(lines(val_de)),
             "budget_s": a.budget, "threads": a.threads, "dtype": a.dtype, "twin_openblas_core": blas}
        peak = json.loads(run_measured([attn, "bench", "--peak", "--json", "--reps", "1", *threads, "1,16,1,16"])[0]
                          .splitlines()[0])
        r["fma_peak_gflops"] = peak["peak_gflops"]

        # attn, its snapshots' times noted as they appear.
        model = f("attn.safetensors")
        seen, stop = {}, threading.Event()
        t0 = time.perf_counter()

        def watch():
            while not stop.is_set():
                for name in os.listdir(work):  # (not the temporaries a snapshot is written under)
                    if re.fullmatch(r"attn\.step\d+\.safetensors", name) and name not in seen:
                        seen[name] = time.perf_counter() - t0
                time.sleep(0.5)
        watcher = threading.Thread(target=watch)
        watcher.start()
        _, err, rss, seconds = run_measured(
            [attn, "train", "--task", "translate", "--source", f("train.de"), "--target", f("train.en"),
             "--valid-source", f("held.de"), "--valid-target", f("held.en"), "--time", f"{a.budget}s",
             "--save-steps", str(a.curve_steps), "--checkpoint-steps", "0", "--dtype", a.dtype, *threads, "-o", model])
        stop.set()
        watcher.join()
        progress = [l for l in err.splitlines() if l.startswith("progress:")]
        last = progress[-1].split()
        r["attn_train"] = {"tokens_per_second": float(last[last.index("tokens/s") - 1]),
                           "mfu": float(last[last.index("MFU") + 1].rstrip("%")) / 100,
                           "epochs": max(int(l.split()[2].split("/")[0]) for l in progress),
                           "peak_rss_mb": rss, "seconds": seconds,
                           "log": [l for l in err.splitlines() if not l.startswith("progress:")]}
        out, _, rss, seconds = run_measured([attn, "translate", "--model", model, "--batch", val_de, "--beam", "5",
                                             *threads, "-o", f("attn.val.en")])
        r["attn_valid"] = {**scores(attn, f("attn.val.en"), val_en), "seconds": seconds, "peak_rss_mb": rss}
        curve = []
        for name, at in sorted(seen.items(), key=lambda kv: kv[1]):
            run_measured([attn, "translate", "--model", f(name), "--batch", val_de, "--beam", "1", *threads,
                          "-o", f(name + ".en")])
            curve.append((at / 60, scores(attn, f(name + ".en"), val_en)["bleu"]))
        r["attn_curve"] = curve

        # Translation speed on the first sentences of val.de.
        subset = f("speed.de")
        write_lines(subset, lines(val_de)[:a.speed_sentences])
        r["attn_speed"] = {}
        for t in (1, 2):
            for beam in (1, 5):
                _, _, rss, seconds = run_measured([attn, "translate", "--model", model, "--batch", subset, "--beam",
                                                   str(beam), "--threads", str(t), "-o", f("speed.en")])
                pieces = run_measured([attn, "tokenize", "--model", model, "--ids", "--data", f("speed.en")])[0]
                made = sum(len(l.split()) + 1 for l in pieces.split("\n")[:-1])
                r["attn_speed"][f"beam{beam}_threads{t}"] = {"sentences_per_second": a.speed_sentences / seconds,
                                                             "target_tokens_per_second": made / seconds,
                                                             "peak_rss_mb": rss}

        if not a.skip_twin:
            for name in ("train.de", "train.en"):
                write_lines(f(name + ".ids"), run_measured([attn, "tokenize", "--model", model, "--ids", "--data",
                                                            f(name)])[0].split("\n")[:-1])
            write_lines(f("val.de.ids"), run_measured([attn, "tokenize", "--model", model, "--ids", "--data",
                                                       val_de])[0].split("\n")[:-1])
            write_lines(f("pieces.txt"), run_measured([attn, "tokenize", "--model", model, "--vocabulary"])[0]
                        .split("\n")[:-1])
            out, _, rss, seconds = run_measured(
                [a.python, os.path.join(PEERS, "torch_translator.py"), "train", "--model", model,
                 "--train-source", f("train.de.ids"), "--train-target", f("train.en.ids"),
                 "--valid-source", f("val.de.ids"), "--vocabulary", f("pieces.txt"), "--seconds", str(a.budget),
                 "--threads", str(a.threads), "--peak-gflops", str(r["fma_peak_gflops"]), "--dtype", a.dtype,
                 "--speed-sentences", str(a.speed_sentences), "--curve-every", str(a.curve_every),
                 "--out", f("twin.val.en")])
            twin = json.loads(out.splitlines()[-1])
            twin["peak_rss_mb"] = rss
            twin["valid"] = scores(attn, f("twin.val.en"), val_en)
            twin_curve = []
            for name in sorted(os.listdir(work)):
                if name.startswith("twin.val.en.at"):
                    at = float(name[len("twin.val.en.at"):-1])
                    twin_curve.append((at / 60, scores(attn, f(name), val_en)["bleu"]))
            twin["curve"] = sorted(twin_curve)
            r["twin"] = twin
        if a.svg:
            series = {"attn": r["attn_curve"]}
            if "twin" in r:
                series["PyTorch twin"] = r["twin"]["curve"]
            with open(a.svg, "w") as out:
                out.write(curve_svg(series, f"Multi30k de→en, {a.threads} threads, {a.budget / 60:.0f} min each"))
    print(json.dumps(r, indent=1))


if __name__ == "__main__":
    main()
