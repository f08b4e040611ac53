#!/usr/bin/env python3
"""attn's language model trained on a GPU against its PyTorch twin on the same GPU (issue #55's
first target): the same tokens, shape, batch and context, the same wall-clock budget each.

  python3 bench/gpu/train_lm_vs_torch.py --attn BUILD/attn --data CORPUS[.xz] --seconds 60 --out DIR
  python3 bench/gpu/train_lm_vs_torch.py --attn BUILD/attn --data CORPUS --quick --out DIR   # smoke test

Steps, each logged to DIR and each failure reported and passed over where the next can go on:
  1. The corpus's non-blank lines (one paragraph a line): the last --valid-share (2%, at most
     --valid-max-lines) held out as valid.txt, the rest train.txt (at most --max-lines).
  2. attn train --task lm --device cuda --dtype bf16 --learn-embeddings DIM ... --time S: its
     tokens/s (the epochs' own figures, the progress lines', and tokens trained ÷ S) and the MFU it
     prints; GPU memory by nvidia-smi's per-process figure, sampled.
  3. attn eval on valid.txt: validation perplexity.
  4. attn tokenize of train.txt and valid.txt with attn's model: the twin reads exactly attn's ids
     (and its vocabulary and shape come from attn's model file). When attn's GPU run made no
     model, a one-step CPU run of the same command stands in for them.
  5. The twin (bench/peers/torch_lm.py train --device cuda --dtype bf16): its tokens/s after
     warm-up, MFU, the allocator's peak, validation perplexity on the same valid tokens.
  6. One JSON table (DIR/result.json, and the last line of standard output) and a summary.
MFU on both sides by attn's estimate (src/train/loop.cpp step_flops: 6 per dense weight, 6·V·E for
the tied output, 12·L·E·T for attention, per token) against --peak-tflops (H100 SXM bf16 dense).

--attn-device cpu runs attn without --device (a CPU build, to test this script where there is no
GPU); --twin-device cpu likewise for the twin.
"""
import argparse
import datetime
import json
import lzma
import math
import os
import re
import shutil
import struct
import subprocess
import sys
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TWIN = os.path.join(REPO, "bench", "peers", "torch_lm.py")


def say(text):
    print(text, flush=True)


def fail(step, text):
    say(f"FAILED {step}: {text}")


class GpuMemorySampler:
    """The most GPU memory nvidia-smi reports for one process (the CUDA context included), sampled
    every half second while it runs; None where nvidia-smi is absent or never saw it."""
    def __init__(self, pid):
        self.pid, self.peak_mb, self._stop = pid, None, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        if shutil.which("nvidia-smi"):
            self._thread.start()

    def _run(self):
        while not self._stop.wait(0.5):
            try:
                out = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
                                     capture_output=True, text=True, timeout=5).stdout
            except (OSError, subprocess.SubprocessError):
                return
            for line in out.splitlines():
                fields = [f.strip() for f in line.split(",")]
                if len(fields) == 2 and fields[0] == str(self.pid) and fields[1].isdigit():
                    self.peak_mb = max(self.peak_mb or 0, int(fields[1]))

    def stop(self):
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()


def run_logged(step, command, log, timeout, stdout_path=None):
    """Runs a command with its standard error (and output, unless stdout_path) in `log`; returns
    (exit status or None on a timeout or a failed start, seconds, peak RSS MB, peak GPU MB)."""
    say(f"== {step}: {' '.join(command)}")
    start = time.perf_counter()
    with open(log, "w") as err, open(stdout_path or os.devnull, "w") as out:
        try:  # without stdout_path, standard output joins the log
            p = subprocess.Popen(command, stdout=out if stdout_path else err, stderr=err)
        except OSError as e:
            fail(step, f"could not start: {e}")
            return None, 0.0, None, None
        sampler = GpuMemorySampler(p.pid)
        deadline = start + timeout
        status = usage = None
        while True:
            pid, st, ru = os.wait4(p.pid, os.WNOHANG)
            if pid == p.pid:
                status, usage = os.waitstatus_to_exitcode(st), ru
                break
            if time.perf_counter() > deadline:
                p.kill()
                _, st, usage = os.wait4(p.pid, 0)
                fail(step, f"killed after {timeout:.0f} s")
                break
            time.sleep(0.05)
        p.returncode = status if status is not None else -9
        sampler.stop()
    seconds = time.perf_counter() - start
    if status not in (None, 0):
        with open(log) as f:
            tail = f.read()[-1500:]
        fail(step, f"exit {status} after {seconds:.1f} s; the end of {log}:\n{tail}")
    return status, seconds, usage.ru_maxrss / 1024 if usage else None, sampler.peak_mb


def read_lines(path, most=0):
    """The non-blank lines (the first `most`, when given: a large .xz need not be read whole)."""
    opener = lzma.open if path.endswith(".xz") else open
    lines = []
    with opener(path, "rt", encoding="utf-8") as f:
        for line in f:
            if line.strip():
                lines.append(line.rstrip("\n"))
                if most and len(lines) >= most:
                    break
    return lines


def model_shape(path):
    """(config, vocabulary size, dense weights) of an attn model file: dense as attn's step_flops
    counts them, every tensor but the embedding rows and the positions (lookups, not products)."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
    meta = header.pop("__metadata__")
    dense = sum(math.prod(v["shape"]) for k, v in header.items() if k not in ("embedding.weight", "position.weight"))
    return json.loads(meta["config"]), len(json.loads(meta["input_words"])), dense


def flops_per_token(config, vocab, dense):
    """attn's step_flops per token of a full window: 6 per dense weight, 6·V·E for the tied
    output, 12·L·E·T for attention (torch_lm.py counts the same from its parameters)."""
    return 6.0 * dense + 6.0 * vocab * config["dim"] + 12.0 * max(config["layers"], 1) * config["dim"] * config["max_positions"]


def parse_attn_train(text):
    """What attn train --task lm prints on standard error (cli/train_progress.cpp, cli/cmd_train.cpp):
      epoch E/N  loss L  valid perplexity P  accuracy A (n N)  R tokens/s  S s   (each epoch's end)
      progress: epoch E/N step s/n  loss L  lr X  R tokens/s  MFU M%  ETA t      (every 5 s)
      T tokens trained on (the --time budget)"""
    epochs = [(float(r), float(s)) for r, s in re.findall(r"^epoch \d+/\d+ .*?([0-9.]+) tokens/s  ([0-9.]+) s$", text, re.M)]
    progress = re.findall(r"^progress: .*?([0-9.]+) tokens/s(?:  MFU ([0-9.]+)%)?", text, re.M)
    trained = re.search(r"^(\d+) tokens trained on", text, re.M)
    r = {"epoch_tokens_per_second": [e[0] for e in epochs], "epoch_seconds": [e[1] for e in epochs],
         "progress_tokens_per_second": float(progress[-1][0]) if progress else None,
         "reported_mfu": float(progress[-1][1]) / 100 if progress and progress[-1][1] else None,
         "trained_tokens": int(trained.group(1)) if trained else None}
    # The epochs' own rates (their training time only, held-out scoring left out), weighted by their
    # seconds; an epoch's tail shorter than a second says little when longer ones exist.
    long = [e for e in epochs if e[1] >= 1.0] or epochs
    if long:
        r["epochs_tokens_per_second"] = sum(t * s for t, s in long) / max(sum(s for _, s in long), 1e-9)
    return r


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--attn", required=True, help="a CUDA build's attn")
    p.add_argument("--data", required=True, help="text, one paragraph a line (.xz read directly)")
    p.add_argument("--seconds", type=float, default=60, help="each side's training budget")
    p.add_argument("--out", required=True)
    p.add_argument("--dim", type=int, default=512)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--layers", type=int, default=6)
    p.add_argument("--feedforward", type=int, default=2048)
    p.add_argument("--context", type=int, default=256)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--vocab", type=int, default=16000)
    p.add_argument("--threads", type=int, default=16, help="attn's CPU threads")
    p.add_argument("--valid-share", type=float, default=0.02)
    p.add_argument("--valid-max-lines", type=int, default=2000, help="attn eval runs on the CPU: a bounded validation set")
    p.add_argument("--max-lines", type=int, default=0, help="read only the first N/(1 − valid share) lines: about N train, the rest held out (0: all)")
    p.add_argument("--peak-tflops", type=float, default=989.4, help="the MFU's denominator (H100 SXM bf16 dense)")
    p.add_argument("--python", default=sys.executable, help="the Python with PyTorch (CUDA)")
    p.add_argument("--quick", action="store_true", help="a few seconds each on a tiny shape: the whole path smoke-tested")
    p.add_argument("--attn-device", default="cuda", help=argparse.SUPPRESS)  # cpu: no --device (a CPU build)
    p.add_argument("--twin-device", default="cuda", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.quick:
        a.seconds = min(a.seconds, 8)
        a.dim, a.heads, a.layers, a.feedforward, a.context, a.batch, a.vocab = 64, 4, 2, 128, 64, 16, 2000
        a.max_lines = a.max_lines or 5000
    os.makedirs(a.out, exist_ok=True)
    out = os.path.abspath(a.out)
    attn = os.path.abspath(a.attn)
    r = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
         "commit": subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip(),
         "corpus": os.path.basename(a.data), "seconds": a.seconds, "peak_tflops": a.peak_tflops,
         "shape": {k: getattr(a, k) for k in ("dim", "heads", "layers", "feedforward", "context", "batch", "vocab")},
         "quick": a.quick, "failed": []}
    if shutil.which("nvidia-smi"):
        r["gpu"] = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,clocks.max.sm", "--format=csv,noheader"],
                                  capture_output=True, text=True).stdout.strip()

    def write_result():
        with open(os.path.join(out, "result.json"), "w") as f:
            json.dump(r, f, indent=1)

    # 1. train / valid
    train_txt, valid_txt = os.path.join(out, "train.txt"), os.path.join(out, "valid.txt")
    try:
        lines = read_lines(a.data, math.ceil(a.max_lines / (1 - a.valid_share)) if a.max_lines else 0)
        held = min(max(1, round(a.valid_share * len(lines))), a.valid_max_lines)
        train_lines, valid_lines = lines[:-held], lines[-held:]
        if a.max_lines:
            train_lines = train_lines[:a.max_lines]
        with open(train_txt, "w") as f:
            f.write("".join(line + "\n" for line in train_lines))
        with open(valid_txt, "w") as f:
            f.write("".join(line + "\n" for line in valid_lines))
        r["train_lines"], r["valid_lines"] = len(train_lines), len(valid_lines)
        say(f"== split: {len(train_lines)} training lines, {len(valid_lines)} held out (the corpus's last)")
    except (OSError, UnicodeDecodeError, lzma.LZMAError) as e:
        fail("split", str(e))
        r["failed"].append("split")
        write_result()
        print(json.dumps(r))
        return 1

    # 2. attn train on the GPU
    model = os.path.join(out, "attn.safetensors")
    shape = ["--learn-embeddings", str(a.dim), "--dim", str(a.dim), "--heads", str(a.heads), "--layers", str(a.layers),
             "--feedforward", str(a.feedforward), "--context", str(a.context), "--batch", str(a.batch),
             "--vocab", str(a.vocab), "--threads", str(a.threads)]
    device = [] if a.attn_device == "cpu" else ["--device", a.attn_device]
    budget = f"{a.seconds:g}s"
    log = os.path.join(out, "attn_train.log")
    status, secs, rss, gpu_mb = run_logged("attn train", [attn, "train", "--task", "lm", "--data", train_txt, *device,
                                                          "--dtype", "bf16", *shape, "--time", budget, "-o", model],
                                           log, timeout=a.seconds + 600)
    at = {"command_seconds": secs, "peak_rss_mb": rss, "gpu_memory_mb_nvidia_smi": gpu_mb, "exit": status}
    try:
        with open(log) as f:
            at.update(parse_attn_train(f.read()))
    except OSError as e:
        fail("attn train's log", str(e))
    trained = at.get("trained_tokens")
    at["tokens_per_second_whole_budget"] = trained / a.seconds if trained else None
    # attn's rate: its epochs' training time (like the twin's after warm-up: no held-out scoring),
    # else its last progress line, else the budget's.
    at["tokens_per_second"] = at.get("epochs_tokens_per_second") or at.get("progress_tokens_per_second") \
        or at["tokens_per_second_whole_budget"]
    r["attn"] = at
    attn_made_model = status == 0 and os.path.exists(model)
    if not attn_made_model:
        r["failed"].append("attn train")
        # The twin still needs attn's vocabulary and shape: one CPU step of the same command.
        status, *_ = run_logged("attn train (one CPU step: the twin's vocabulary and shape)",
                                [attn, "train", "--task", "lm", "--data", train_txt, *shape, "--max-tokens", "1", "-o", model],
                                os.path.join(out, "attn_train_stand_in.log"), timeout=600)
        if status != 0:
            r["failed"].append("stand-in model")
    have_model = os.path.exists(model)
    if have_model:
        try:
            config, vocab, dense = model_shape(model)
            fpt = flops_per_token(config, vocab, dense)
            r["model"] = {"config": config, "vocab": vocab, "flops_per_token": fpt}
            if at["tokens_per_second"]:
                at["mfu"] = fpt * at["tokens_per_second"] / (a.peak_tflops * 1e12)
        except (OSError, ValueError, KeyError) as e:
            fail("model shape", str(e))
    write_result()

    # 3. attn eval
    if attn_made_model:
        ev_out = os.path.join(out, "attn_eval.json")
        status, *_ = run_logged("attn eval", [attn, "eval", "--model", model, "--data", valid_txt, "--threads", str(a.threads)],
                                os.path.join(out, "attn_eval.log"), timeout=900, stdout_path=ev_out)
        try:
            with open(ev_out) as f:
                ev = json.loads(f.read().strip().splitlines()[-1])
            at["perplexity"], at["valid_tokens"] = ev["perplexity"], ev["tokens"]
        except (OSError, ValueError, KeyError, IndexError) as e:
            fail("attn eval", f"no JSON line: {e}")
            r["failed"].append("attn eval")
        write_result()

    # 4. the same tokens for the twin
    tokens = {}
    if have_model:
        for name, path in (("train", train_txt), ("valid", valid_txt)):
            tokens[name] = os.path.join(out, name + ".tokens")
            status, *_ = run_logged(f"attn tokenize {name}", [attn, "tokenize", "--model", model, "--data", path],
                                    os.path.join(out, f"tokenize_{name}.log"), timeout=900, stdout_path=tokens[name])
            if status != 0:
                r["failed"].append(f"tokenize {name}")
                tokens.pop(name)

    # 5. the twin
    if len(tokens) == 2:
        twin_out = os.path.join(out, "twin.json")
        status, secs, rss, gpu_mb = run_logged(
            "torch twin", [a.python, TWIN, "train", "--model", model, "--train", tokens["train"], "--test", tokens["valid"],
                           "--seconds", str(a.seconds), "--batch", str(a.batch), "--device", a.twin_device, "--dtype", "bf16",
                           "--peak-tflops", str(a.peak_tflops), "--threads", str(a.threads)],
            os.path.join(out, "twin.log"), timeout=a.seconds + 900, stdout_path=twin_out)
        try:
            with open(twin_out) as f:
                tw = json.loads(f.read().strip().splitlines()[-1])
            tw.update({"command_seconds": secs, "peak_rss_mb": rss, "gpu_memory_mb_nvidia_smi": gpu_mb})
            r["torch"] = tw
        except (OSError, ValueError, IndexError) as e:
            fail("torch twin", f"no JSON line: {e}")
            r["failed"].append("torch twin")
    else:
        r["failed"].append("torch twin (no tokens)")

    # 6. the table
    tw = r.get("torch", {})
    if at.get("tokens_per_second") and tw.get("tokens_per_second"):
        r["ratio"] = at["tokens_per_second"] / tw["tokens_per_second"]
    if at.get("tokens_per_second_whole_budget") and tw.get("tokens_per_second_whole_budget"):
        r["ratio_whole_budget"] = at["tokens_per_second_whole_budget"] / tw["tokens_per_second_whole_budget"]
    write_result()

    def cell(v, form):
        width = len(form.format(0.0))
        return form.format(v) if isinstance(v, (int, float)) else "-".rjust(width)
    say(f"\n{r.get('gpu', 'no nvidia-smi')}; {a.seconds:g} s each; dim {a.dim}, {a.layers} layers, {a.heads} heads, "
        f"ff {a.feedforward}, context {a.context}, batch {a.batch}, vocab {a.vocab}")
    say(f"{'':6} {'tokens/s':>10} {'budget tok/s':>12} {'MFU':>6} {'GPU MB (smi)':>12} {'alloc MB':>9} {'valid ppl':>9}")
    for name, s in (("attn", at), ("torch", tw)):
        say(f"{name:6} {cell(s.get('tokens_per_second'), '{:10.0f}')} {cell(s.get('tokens_per_second_whole_budget'), '{:12.0f}')} "
            f"{cell(100 * s['mfu'] if s.get('mfu') is not None else None, '{:5.1f}%')} "
            f"{cell(s.get('gpu_memory_mb_nvidia_smi'), '{:12.0f}')} {cell(s.get('peak_memory_mb'), '{:9.0f}')} "
            f"{cell(s.get('perplexity'), '{:9.2f}')}")
    say(f"attn ÷ torch: {cell(r.get('ratio'), '{:.2f}x')} (steady), {cell(r.get('ratio_whole_budget'), '{:.2f}x')} (whole budget)")
    if r["failed"]:
        say(f"failed steps: {', '.join(r['failed'])}")
    print(json.dumps(r), flush=True)
    return 1 if r["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
