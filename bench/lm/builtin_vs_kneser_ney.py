#!/usr/bin/env python3
"""The built-in language model against an interpolated Kneser–Ney 5-gram trained on the whole
Wikipedia corpus with the same vocabulary (issue #28's target for `--model builtin-lm`).

  bench/lm/builtin_vs_kneser_ney.py --corpus ../shared/data/wikipedia/enwiki.txt.xz [--order 5]
      [--model builtin-lm]   (or a file made by scripts/make_builtin_lm.py, before it is embedded: 16,384 words + 2)

1. `attn tokenize --model builtin-lm` reads the whole corpus: the built-in model's 16,384 words,
   <unk> and <eos>, so the n-gram model has the neural model's vocabulary exactly.
2. The held-out paragraphs are the ones scripts/make_builtin_lm.py's run never trained on: every
   20th of the corpus's first 40,000 non-blank paragraphs (attn train's rule). The n-gram model
   trains on every other paragraph of the corpus — all 40M words, about twice what the built-in
   model read in its hour.
3. `attn eval --model builtin-lm` and bench/peers/kneser_ney_arrays.py score the same paragraphs.

Prints one JSON line and a summary. Needs several GB of memory for the 5-gram tables.
"""
import argparse
import json
import lzma
import os
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def held_out(i):  # corpus_trainer.cpp's held_out(): every 20th of the first 20 × 2000
    return i % 20 == 0 and i // 20 < 2000


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--corpus", required=True)
    p.add_argument("--order", type=int, default=5)
    p.add_argument("--model", default="builtin-lm", help="the model measured and whose vocabulary the n-grams take")
    p.add_argument("--attn", default=os.path.join(REPO, "build", "bin", "attn"))
    p.add_argument("--python", default="/usr/bin/python3")
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as work:
        held_text, held_tok, train_tok, all_tok = (os.path.join(work, n) for n in
                                                   ("held.txt", "held.tok", "train.tok", "all.tok"))
        start = time.time()
        subprocess.run([a.attn, "tokenize", "--model", a.model, "--data", a.corpus, "-o", all_tok], check=True)
        opener = lzma.open if a.corpus.endswith(".xz") else open
        with opener(a.corpus, "rt", encoding="utf-8") as raw, open(all_tok, encoding="utf-8") as tokens, \
                open(held_text, "w", encoding="utf-8") as ht, open(held_tok, "w", encoding="utf-8") as hk, \
                open(train_tok, "w", encoding="utf-8") as tk:
            i = 0
            for line in raw:
                if not line.strip():
                    continue  # attn reads non-blank lines only, and tokenize writes one line each
                tokenized = tokens.readline()
                if not tokenized:
                    sys.exit("error: attn tokenize wrote fewer lines than the corpus has paragraphs")
                if held_out(i):
                    ht.write(line if line.endswith("\n") else line + "\n")
                    hk.write(tokenized)
                else:
                    tk.write(tokenized)
                i += 1
            if tokens.readline():
                sys.exit("error: attn tokenize wrote more lines than the corpus has paragraphs")
        prepared = time.time() - start
        neural = json.loads(subprocess.run([a.attn, "eval", "--model", a.model, "--data", held_text],
                                           check=True, capture_output=True, text=True).stdout)
        kn = json.loads(subprocess.run([a.python, os.path.join(REPO, "bench", "peers", "kneser_ney_arrays.py"),
                                        "--train", train_tok, "--test", held_tok, "--order", str(a.order),
                                        "--vocab-size", "16386"], check=True, capture_output=True,
                                       text=True).stdout)
    result = {"corpus": os.path.basename(a.corpus), "paragraphs": i, "held_out_paragraphs": min(2000, (i + 19) // 20),
              "builtin_lm": neural, "kneser_ney": kn, "prepare_seconds": prepared,
              "ratio": neural["perplexity"] / kn["perplexity"]}
    print(json.dumps(result))
    print(f"built-in model {neural['perplexity']:.1f} against Kneser-Ney {a.order}-gram {kn['perplexity']:.1f} "
          f"(trained on {kn['train_tokens']:,} tokens) on {neural['tokens']:,} held-out tokens: "
          f"ratio {result['ratio']:.3f}", file=sys.stderr)


if __name__ == "__main__":
    main()
