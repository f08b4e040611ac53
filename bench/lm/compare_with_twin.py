#!/usr/bin/env python3
"""Weight by weight: attn's language-model training against the PyTorch twin's, from the same
initial weights, on a text small enough to be one batch (under 200 paragraphs, so nothing is held
out; at most batch × context tokens). Dropout 0, the same warm-up and cosine schedule.

  bench/lm/compare_with_twin.py --text SMALL.txt [--steps 15]

attn makes the initial weights (one step at a learning rate of 1e-20) and the trained ones
(--max-tokens for STEPS full-batch steps); the twin (bench/peers/torch_lm.py) loads the initial
weights and takes the same steps; the largest difference per parameter is printed. On 2026-11-24:
one step agreed to 3e-5 and 15 steps to 1.4e-4 (steps of 0.003), so attn's optimiser, clipping and
schedule match PyTorch's; see docs/LM.md for the gap that minibatches show.
"""
import argparse
import math
import os
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "bench", "peers"))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--text", required=True)
    p.add_argument("--steps", type=int, default=15)
    p.add_argument("--attn", default=os.path.join(REPO, "build", "bin", "attn"))
    a = p.parse_args()
    import torch
    import torch.nn.functional as F
    import torch_lm
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as work:
        init, trained, tokens = (os.path.join(work, n) for n in ("init.safetensors", "trained.safetensors", "text.tok"))
        common = ["train", "--task", "lm", "--data", a.text, "--dropout", "0", "--threads", "1"]
        subprocess.run([a.attn, *common, "-o", init, "--max-tokens", "1", "--lr", "1e-20"], check=True, capture_output=True)
        t0, config, words = torch_lm.read_model(init)
        step_tokens = 32 * config["max_positions"]  # --max-tokens counts full batches
        subprocess.run([a.attn, *common, "-o", trained, "--max-tokens", str(a.steps * step_tokens)], check=True,
                       capture_output=True)
        with open(tokens, "w") as f:
            f.write(subprocess.run([a.attn, "tokenize", "--model", init, "--data", a.text], check=True,
                                   capture_output=True, text=True).stdout)
        index = {w: i for i, w in enumerate(words)}
        model = torch_lm.make_twin(config, len(words))
        model.load_attn(t0)
        model.train()
        windows = torch_lm.windows(torch_lm.read_stream(tokens, index), config["max_positions"])
        if len(windows) > 32:
            sys.exit(f"error: {a.text}: {len(windows)} windows; the comparison needs one batch (at most 32)")
        decay = [q for n, q in model.named_parameters() if q.dim() == 2 and "embedding" not in n and n != "position"]
        rest = [q for n, q in model.named_parameters() if not (q.dim() == 2 and "embedding" not in n and n != "position")]
        opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": rest, "weight_decay": 0.0}], lr=0.003)
        rows = sum(len(w) - 1 for w in windows)
        warmup = max(1, round(0.05 * a.steps))
        for step in range(a.steps):  # attn's learning_rate(): linear warm-up, cosine to 0
            if step < warmup:
                lr = 0.003 * (step + 1) / warmup
            else:
                share = min(max((step - warmup) / max(1, a.steps - warmup - 1), 0.0), 1.0)
                lr = 0.003 * 0.5 * (1 + math.cos(math.pi * share))
            for g in opt.param_groups:
                g["lr"] = lr
            opt.zero_grad()
            for w in windows:
                (F.cross_entropy(model(w[:-1].unsqueeze(0))[0], w[1:], reduction="sum") / rows).backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
        theirs = torch_lm.make_twin(config, len(words))
        theirs.load_attn(torch_lm.read_model(trained)[0])
        for (name, mine), (_, attns) in zip(model.named_parameters(), theirs.named_parameters()):
            print(f"{name:40s} max |twin − attn| {(mine - attns).abs().max().item():.2e}")


if __name__ == "__main__":
    main()
