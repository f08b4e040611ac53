#!/usr/bin/env python3
"""Interpolated Kneser–Ney n-gram language model: the classic baseline a neural language model is
held against (issue #28), written for bench/ and scored on the same word tokens attn's language
model reads.

Tokens: each non-blank line is a paragraph, split by attn's own tokenizer (attn.tokenize, through
the Python module: lowercased, punctuation and clitics split), followed by an end-of-paragraph
token <eos>. The vocabulary is the --vocab most frequent training words plus <unk> and <eos>;
every other word is <unk> and is scored like any word (it counts in the perplexity and in
unknown_share), as attn's --task lm counts it.

The model (Chen & Goodman's interpolated Kneser–Ney, one absolute discount per order,
D = n1 / (n1 + 2·n2) from that order's count-of-counts): for the highest order,
  P(w | h) = max(c(h w) − D, 0) / c(h) + D · N1+(h •) / c(h) · P_lower(w | h'),
for the lower orders the same with continuation counts N1+(• h w) (how many distinct words come
before h w) in place of counts, and at the bottom an interpolation with the uniform 1/|V|. A
context never seen gives all its weight to the next order down. Paragraphs are padded with
order − 1 start symbols <s>, which are never predicted.

usage: kneser_ney.py --train FILE [--train FILE …] --test FILE [--order 5] [--vocab 30000]
                     [--python-module build/python]
FILEs may be .xz or .gz. Prints one JSON line: perplexity, tokens, unknown_share, order, vocab,
train_tokens, n-gram counts per order, seconds. Memory grows with the distinct n-grams (Python
dicts): a book or two is fine; tens of millions of words want more memory than this machine has.
"""
import argparse
import collections
import gzip
import json
import lzma
import math
import os
import sys
import time

START, END, UNKNOWN = "<s>", "<eos>", "<unk>"


def open_text(path):
    with open(path, "rb") as f:
        magic = f.read(6)
    if magic.startswith(b"\xfd7zXZ\x00"):
        return lzma.open(path, "rt", encoding="utf-8")
    if magic.startswith(b"\x1f\x8b"):
        return gzip.open(path, "rt", encoding="utf-8")
    return open(path, encoding="utf-8")


def paragraphs(paths, tokenize):
    """Each non-blank line's tokens."""
    for path in paths:
        with open_text(path) as f:
            for line in f:
                if line.strip():
                    yield tokenize(line)


def make_vocabulary(token_lists, size):
    counts = collections.Counter(t for tokens in token_lists for t in tokens)
    words = [w for w, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:size]]
    return set(words) | {UNKNOWN, END}


def in_vocabulary(tokens, vocabulary):
    return [t if t in vocabulary else UNKNOWN for t in tokens] + [END]


class KneserNey:
    def __init__(self, order, vocabulary):
        self.order = order
        self.vocabulary = vocabulary
        # counts[m][context][word]: raw counts at the highest order, continuation counts below.
        self.counts = [None] + [collections.defaultdict(collections.Counter) for _ in range(order)]

    def train(self, token_lists):
        n = self.order
        highest = self.counts[n]
        seen = [None] + [set() for _ in range(n)]  # distinct m-grams, for continuation counts
        for tokens in token_lists:
            padded = [START] * (n - 1) + tokens
            for i in range(n - 1, len(padded)):
                highest[tuple(padded[i - n + 1:i])][padded[i]] += 1
                for m in range(2, n + 1):
                    seen[m].add(tuple(padded[i - m + 1:i + 1]))
        # N1+(• h w): one for each distinct word before h w.
        for m in range(1, n):
            for gram in seen[m + 1]:
                self.counts[m][gram[1:-1]][gram[-1]] += 1
        # Totals, distinct followers and one discount per order.
        self.totals, self.followers, self.discounts = [None], [None], [None]
        for m in range(1, n + 1):
            table = self.counts[m]
            self.totals.append({h: sum(c.values()) for h, c in table.items()})
            self.followers.append({h: len(c) for h, c in table.items()})
            of = collections.Counter(v for c in table.values() for v in c.values())
            n1, n2 = of.get(1, 0), of.get(2, 0)
            self.discounts.append(n1 / (n1 + 2 * n2) if n1 + n2 > 0 else 0.5)

    def probability(self, word, context):
        """P(word | the last order − 1 tokens of context)."""
        p = 1.0 / len(self.vocabulary)
        for m in range(1, self.order + 1):
            h = tuple(context[len(context) - m + 1:]) if m > 1 else ()
            total = self.totals[m].get(h, 0)
            if total == 0:
                continue  # never seen: all weight to the order below
            d = self.discounts[m]
            c = self.counts[m][h].get(word, 0)
            p = max(c - d, 0.0) / total + d * self.followers[m][h] / total * p
        return p

    def score(self, token_lists):
        """(sum of −log P over every token, including <eos>; tokens; unknown tokens)."""
        n = self.order
        loss, tokens, unknown = 0.0, 0, 0
        for words in token_lists:
            padded = [START] * (n - 1) + words
            for i in range(n - 1, len(padded)):
                loss -= math.log(self.probability(padded[i], padded[i - n + 1:i]))
                tokens += 1
                unknown += padded[i] == UNKNOWN
        return loss, tokens, unknown


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--train", action="append", required=True)
    p.add_argument("--test", required=True)
    p.add_argument("--order", type=int, default=5)
    p.add_argument("--vocab", type=int, default=30000)
    p.add_argument("--python-module", default="build/python")
    a = p.parse_args()
    if a.order < 1 or a.vocab < 1:
        sys.exit("error: --order and --vocab must be at least 1")
    sys.path.insert(0, a.python_module)
    import attn  # attn's tokenizer, so both sides see the same tokens

    start = time.time()
    train = list(paragraphs(a.train, attn.tokenize))
    vocabulary = make_vocabulary(train, a.vocab)
    train = [in_vocabulary(t, vocabulary) for t in train]
    model = KneserNey(a.order, vocabulary)
    model.train(train)
    test = [in_vocabulary(t, vocabulary) for t in paragraphs([a.test], attn.tokenize)]
    loss, tokens, unknown = model.score(test)
    print(json.dumps({
        "peer": "kneser-ney", "order": a.order, "vocab": len(vocabulary),
        "perplexity": math.exp(loss / tokens), "tokens": tokens, "unknown_share": unknown / tokens,
        "train_tokens": sum(len(t) for t in train),
        "ngrams": [sum(len(c) for c in model.counts[m].values()) for m in range(1, a.order + 1)],
        "seconds": time.time() - start}))


if __name__ == "__main__":
    main()
