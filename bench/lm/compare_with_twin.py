#!/usr/bin/env python3
"""Weight by weight and perplexity by perplexity: attn's language-model training against the
PyTorch twin's, from the same initial weights, on the same windows in the same order.

  bench/lm/compare_with_twin.py --text TEXT [--steps 15] [--batch 32] [--context 128] [--seed 0]
                                [--threads 1] [--test HELD.txt]

attn makes the initial weights (one step at a learning rate of 1e-20) and the trained ones
(--max-tokens for STEPS steps, dropout 0); the twin (bench/peers/torch_lm.py's network) loads the
initial weights and takes the same steps: the windows of the same paragraph stream (attn's own
held-out paragraphs, every 20th of 200 or more, left out), in attn's shuffled order (its
xoshiro256** generator, replayed here), the same warm-up and cosine schedule, clipping and AdamW.
Prints the largest difference per parameter and, with --test, both models' held-out perplexity.

What it showed on 2026-11-24: one full-batch step agrees to 3e-5 and 15 to 1.4e-4 (steps of
0.003); minibatches agree as closely until an element whose gradient is near zero takes Adam's
full-size step one way in one and the other way in the other (float rounding decides; from then
on the weights drift apart as any two runs do), and after 286 steps of 32 × 128 tokens on a book
the held-out perplexities are 187 (twin) and 179 (attn): the training loops match. See
docs/LM.md for what the earlier gap to the twin was (the vocabulary, not the loop).
"""
import argparse
import math
import os
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "bench", "peers"))


M64 = (1 << 64) - 1


def splitmix_mix(a, b):  # corpus_trainer.cpp's mix()
    z = a ^ ((b + 0x9E3779B97F4A7C15 + (a << 6) + (a >> 2)) & M64)
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


class Xoshiro:  # rng.cpp: xoshiro256** seeded by splitmix64
    def __init__(self, seed):
        self.s = []
        for _ in range(4):
            seed = (seed + 0x9E3779B97F4A7C15) & M64
            z = seed
            z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
            z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
            self.s.append(z ^ (z >> 31))

    def next(self):
        s = self.s
        rotl = lambda x, k: ((x << k) | (x >> (64 - k))) & M64
        result = (rotl((s[1] * 5) & M64, 7) * 9) & M64
        t = (s[1] << 17) & M64
        s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3]; s[2] ^= t
        s[3] = rotl(s[3], 45)
        return result

    def below(self, n):
        limit = (1 << 64) % n
        while True:
            x = self.next()
            if x >= limit:
                return x % n

    def shuffle(self, items):
        for i in range(len(items), 1, -1):
            j = self.below(i)
            items[i - 1], items[j] = items[j], items[i - 1]


def attn_batches(stream, t, batch, steps, eos, seed=0):
    """The windows of each of attn's steps on one chunk (a small text): each epoch the stream starts
    at a paragraph drawn for the epoch (wrapping around), then its windows are shuffled by the
    epoch's generator (corpus_trainer.cpp)."""
    import torch_lm
    starts = torch_lm.paragraph_starts(stream, eos)
    order, epoch = [], 1
    while len(order) < steps:
        chunk = splitmix_mix(splitmix_mix(seed, epoch), 0)
        first = int(starts[Xoshiro(splitmix_mix(chunk, 1)).below(len(starts))])
        ws = torch_lm.windows(torch_lm.starting_at(stream, first), t)
        ids = list(range(len(ws)))
        Xoshiro(chunk).shuffle(ids)
        order += [[ws[k] for k in ids[b:b + batch]] for b in range(0, len(ids), batch)]
        epoch += 1
    return order[:steps]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--text", required=True)
    p.add_argument("--steps", type=int, default=15)
    p.add_argument("--threads", type=int, default=1, help="attn's threads")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--test", help="held-out text: both trained models' perplexity on it")
    p.add_argument("--context", type=int, default=128)
    p.add_argument("--attn", default=os.path.join(REPO, "build", "bin", "attn"))
    a = p.parse_args()
    import torch
    import torch.nn.functional as F
    import torch_lm
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as work:
        init, trained, tokens = (os.path.join(work, n) for n in ("init.safetensors", "trained.safetensors", "text.tok"))
        common = ["train", "--task", "lm", "--data", a.text, "--dropout", "0", "--threads", str(a.threads),
                  "--batch", str(a.batch), "--context", str(a.context), "--seed", str(a.seed)]
        subprocess.run([a.attn, *common, "-o", init, "--max-tokens", "1", "--lr", "1e-20"], check=True, capture_output=True)
        t0, config, words = torch_lm.read_model(init)
        step_tokens = a.batch * config["max_positions"]  # --max-tokens counts full batches
        subprocess.run([a.attn, *common, "-o", trained, "--max-tokens", str(a.steps * step_tokens)], check=True,
                       capture_output=True)
        with open(tokens, "w") as f:
            f.write(subprocess.run([a.attn, "tokenize", "--model", init, "--data", a.text], check=True,
                                   capture_output=True, text=True).stdout)
        index = {w: i for i, w in enumerate(words)}
        model = torch_lm.make_twin(config, len(words))
        model.load_attn(t0)
        model.train()
        with open(tokens) as f:
            lines = f.read().splitlines()
        if len(lines) > 4096:  # attn shuffles within chunks of 4096 training paragraphs
            sys.exit(f"error: {a.text}: {len(lines)} paragraphs; the replayed order covers one chunk (at most 4096)")
        if len(lines) >= 200:  # attn holds out paragraph i when i % 20 == 0, among the first 40,000
            lines = [line for i, line in enumerate(lines) if not (i % 20 == 0 and i // 20 < 2000)]
            with open(tokens, "w") as f:
                f.write("".join(line + "\n" for line in lines))
        stream = torch_lm.read_stream(tokens, index)
        decay = [q for n, q in model.named_parameters() if q.dim() == 2 and "embedding" not in n and n != "position"]
        rest = [q for n, q in model.named_parameters() if not (q.dim() == 2 and "embedding" not in n and n != "position")]
        opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": rest, "weight_decay": 0.0}], lr=0.003)
        batches = attn_batches(stream, config["max_positions"], a.batch, a.steps, index["<eos>"], a.seed)
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
            group = batches[step]
            rows = sum(len(w) - 1 for w in group)
            for w in group:
                (F.cross_entropy(model(w[:-1].unsqueeze(0))[0], w[1:], reduction="sum") / rows).backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
        theirs = torch_lm.make_twin(config, len(words))
        theirs.load_attn(torch_lm.read_model(trained)[0])
        if a.test:
            held = os.path.join(work, "held.tok")
            with open(held, "w") as f:
                f.write(subprocess.run([a.attn, "tokenize", "--model", init, "--data", a.test], check=True,
                                       capture_output=True, text=True).stdout)
            stream = torch_lm.read_stream(held, index)
            for who, m in (("twin", model), ("attn", theirs)):
                loss, n = torch_lm.evaluate(m, stream, config["max_positions"])
                print(f"held-out perplexity {who}: {math.exp(loss):.2f} ({n} tokens)")
        for (name, mine), (_, attns) in zip(model.named_parameters(), theirs.named_parameters()):
            print(f"{name:40s} max |twin − attn| {(mine - attns).abs().max().item():.2e}")


if __name__ == "__main__":
    main()
