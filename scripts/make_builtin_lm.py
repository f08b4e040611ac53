#!/usr/bin/env python3
"""Makes data/lm-wikipedia.safetensors, the built-in language model (`--model builtin-lm`): a causal
Transformer trained with `attn train --task lm` on English Wikipedia (the shared corpus's
enwiki.txt.xz, read compressed), for about an hour on a 2-core machine.

  make build
  scripts/make_builtin_lm.py --corpus ../shared/data/wikipedia/enwiki.txt.xz
  make build   # embeds the new file in the library

The run saves a checkpoint every few minutes (data/lm-wikipedia.safetensors.checkpoint, not in the
repo); stopped (Ctrl-C, or the session ends), the same command with --resume goes on from it and
the time budget goes on from the time already spent. Every 20th of the corpus's first 40,000
paragraphs is held out and never trained on: the held-out perplexity the run prints is on them
(bench/lm scores the peers on the same paragraphs).

Wikipedia text: Wikipedia contributors, CC BY-SA 3.0; the weights are shared under the same
licence (data/NOTICE.md). The text is read by path and never copied into the repo.
"""
import argparse
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# GloVe's rows start the 16,384 most frequent words (the rest of the lm defaults: 4 pre-norm
# layers of width 100, 4 heads); no dropout (the model is small for an hour's 60-130M tokens: at
# 5M tokens of a Wikipedia slice, held-out perplexity 171.8 without it against 180.4 with the
# default 0.1; nanoGPT too trains GPT-2 without dropout and keeps it for small data); a context
# of 512 so that generation reaches 512 words with every word seen; batches of 8 windows (4,096 tokens a step, as the defaults);
# the learning rate 0.003 (at 800k tokens of a held-out slice: perplexity 409, against 507 at 0.001);
# an adaptive softmax with a head of the 2,000 most frequent words (and <unk>, <eos>) and clusters
# [2000, 6000) and [6000, 16384): 1.8-2.0x the tokens an hour of the full softmax reads, at the
# same held-out perplexity per token (docs/LM.md, "The adaptive softmax").
OPTIONS = ["--vocab", "16384", "--context", "512", "--batch", "8", "--lr", "0.003", "--time", "60m",
           "--adaptive-softmax", "2000,6000", "--dropout", "0",
           "--eval-steps", "1000", "--checkpoint-steps", "250", "--seed", "0"]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--corpus", required=True, help="the shared corpus's wikipedia/enwiki.txt.xz")
    p.add_argument("--attn", default=os.path.join(REPO, "build", "bin", "attn"))
    p.add_argument("-o", "--output", default=os.path.join(REPO, "data", "lm-wikipedia.safetensors"))
    p.add_argument("--resume", action="store_true", help="go on from the checkpoint")
    a, extra = p.parse_known_args()
    if not os.path.isfile(a.corpus):
        sys.exit(f"error: {a.corpus}: no such file")
    if not os.path.isfile(a.attn):
        sys.exit(f"error: {a.attn}: no attn binary (run make build)")
    # Run from the corpus's folder, so the model's training record names "enwiki.txt.xz", not a
    # path on this machine.
    command = [os.path.abspath(a.attn), "train", "--task", "lm", "--data", os.path.basename(a.corpus),
               "-o", os.path.abspath(a.output)] + OPTIONS + (["--resume"] if a.resume else []) + extra
    print(" ".join(command), file=sys.stderr)
    sys.exit(subprocess.call(command, cwd=os.path.dirname(os.path.abspath(a.corpus))))


if __name__ == "__main__":
    main()
