#!/usr/bin/env python3
"""Interpolated Kneser–Ney at corpus scale: the model of bench/peers/kneser_ney.py (the same
formulas, discounts and padding; that file is the readable specification and
tests/python/test_kneser_ney.py holds the two to the same probabilities), with its counts in
sorted numpy arrays instead of Python dictionaries, so that a 5-gram model of all 40M words of the
shared Wikipedia fits this machine's memory.

Input: token files as `attn tokenize --model M` writes them (one paragraph a line, `<unk>` and
`<eos>` already there), so the vocabulary is the model's exactly. Each paragraph is padded with
order − 1 start symbols, as the dictionary version pads it.

How the counts are kept: token ids fit in B bits (B ≤ 16), so an m-gram of
up to 4 tokens is one exact uint64 key (its tokens B bits apart, the most recent lowest) and a
5-gram is a pair (its 4-token context's key, its word). Every table is a sorted key array with its
values beside it; lookups are np.searchsorted over all test tokens at once.

  kneser_ney_arrays.py --train TRAIN.tokens --test TEST.tokens [--order 5] [--vocab-size V]

Prints one JSON line: perplexity, tokens, unknown_share, order, train_tokens, n-gram counts per
order, seconds, peak memory. --vocab-size is |V| for the uniform floor (default: the distinct
tokens of both files, <unk> and <eos> included); give the model's own size to match it exactly.
"""
import argparse
import json
import math
import resource
import sys
import time

import numpy as np

START, END, UNKNOWN = "<s>", "<eos>", "<unk>"


def read_ids(path, index):
    """Each line's token ids and the line's end, as one int64 stream with the paragraph starts."""
    ids, starts = [], []
    with open(path, encoding="utf-8") as f:
        for line in f:
            tokens = line.split()
            if not tokens:
                continue
            starts.append(len(ids))
            ids.extend(index.setdefault(t, len(index)) for t in tokens)
    return np.asarray(ids, dtype=np.int64), np.asarray(starts, dtype=np.int64)


def contexts(ids, starts, order, start_id, bits):
    """For every token: the keys of the k tokens before it (k = 0 … order − 1), start symbols
    standing in before a paragraph's first token; most recent token in the lowest bits."""
    n = len(ids)
    position = np.arange(n, dtype=np.int64)
    first = np.repeat(starts, np.diff(np.append(starts, n)))  # each token's paragraph start
    keys = [np.zeros(n, dtype=np.uint64)]
    for k in range(1, order):
        before = position - k
        token = np.where(before >= first, ids[np.maximum(before, 0)], start_id).astype(np.uint64)
        keys.append(keys[-1] | (token << np.uint64(bits * (k - 1))))
    return keys


def gram_keys(context_key, word, bits):
    return (context_key << np.uint64(bits)) | word.astype(np.uint64)


class ArrayKneserNey:
    def __init__(self, order, vocabulary_size, bits, start_id):
        if not 1 <= order <= 5:
            raise ValueError("order must be 1 to 5 (5-grams are keyed as 4-token context + word)")
        self.order, self.size, self.bits, self.start_id = order, vocabulary_size, bits, start_id

    def _table(self, m, context_key, word, values):
        """Order m's table from (h, w) pairs and their values: sorted pair keys, the values, and per
        context h its total and number of distinct followers; the order's discount."""
        if m <= 4:
            key = gram_keys(context_key, word, self.bits)
            order_ = np.argsort(key, kind="stable")
            table = {"key": key[order_], "value": values[order_]}
        else:
            order_ = np.lexsort((word, context_key))
            table = {"context": context_key[order_], "word": word[order_], "value": values[order_]}
        h = context_key[order_]
        hs, first = np.unique(h, return_index=True)
        table["contexts"] = hs
        table["total"] = np.add.reduceat(table["value"], first) if len(first) else np.zeros(0, np.int64)
        table["followers"] = np.diff(np.append(first, len(h)))
        n1 = int(np.count_nonzero(table["value"] == 1))
        n2 = int(np.count_nonzero(table["value"] == 2))
        table["discount"] = n1 / (n1 + 2 * n2) if n1 + n2 > 0 else 0.5
        return table

    def train(self, ids, starts):
        n, b = self.order, self.bits
        ctx = contexts(ids, starts, n, self.start_id, b)
        word = ids.astype(np.uint64)
        self.tables = [None] * (n + 1)
        # The highest order: raw counts of (h, w).
        if n <= 4:
            g = gram_keys(ctx[n - 1], word, b)
            uniq, counts = np.unique(g, return_counts=True)
            h, w = uniq >> np.uint64(b), uniq & np.uint64((1 << b) - 1)
            distinct_h, distinct_w = h, w  # the distinct n-grams, for the order below
        else:
            o = np.lexsort((word, ctx[4]))
            h_sorted, w_sorted = ctx[4][o], word[o]
            new = np.ones(len(o), dtype=bool)
            new[1:] = (h_sorted[1:] != h_sorted[:-1]) | (w_sorted[1:] != w_sorted[:-1])
            first = np.flatnonzero(new)
            h, w = h_sorted[first], w_sorted[first]
            counts = np.diff(np.append(first, len(o)))
            distinct_h, distinct_w = h, w
        self.tables[n] = self._table(n, h, w, counts.astype(np.int64))
        # Lower orders: N1+(• h w), the distinct words before each (h w), from the distinct
        # (m + 1)-grams, whose last m tokens are (h w).
        for m in range(n - 1, 0, -1):
            suffix_h = distinct_h & np.uint64((1 << (b * (m - 1))) - 1) if m > 1 else np.zeros_like(distinct_h)
            g = gram_keys(suffix_h, distinct_w, b)
            uniq, continuation = np.unique(g, return_counts=True)
            h, w = uniq >> np.uint64(b), uniq & np.uint64((1 << b) - 1)
            self.tables[m] = self._table(m, h, w, continuation.astype(np.int64))
            # the distinct m-grams, for the order below
            g_all = gram_keys(ctx[m - 1], word, b)
            uniq = np.unique(g_all)
            distinct_h, distinct_w = uniq >> np.uint64(b), uniq & np.uint64((1 << b) - 1)
        self.train_tokens = len(ids)

    @staticmethod
    def _find(sorted_keys, keys):
        at = np.searchsorted(sorted_keys, keys)
        at_clipped = np.minimum(at, max(len(sorted_keys) - 1, 0))
        found = (at < len(sorted_keys)) & (sorted_keys[at_clipped] == keys) if len(sorted_keys) else np.zeros(len(keys), bool)
        return at_clipped, found

    def log_probabilities(self, ids, starts):
        """ln P(token | its context) for every token of the stream."""
        ctx = contexts(ids, starts, self.order, self.start_id, self.bits)
        word = ids.astype(np.uint64)
        p = np.full(len(ids), 1.0 / self.size)
        for m in range(1, self.order + 1):
            t = self.tables[m]
            h = ctx[m - 1]
            at, seen = self._find(t["contexts"], h)
            total = np.where(seen, t["total"][at], 0).astype(np.float64)
            followers = np.where(seen, t["followers"][at], 0).astype(np.float64)
            if m <= 4:
                gat, gseen = self._find(t["key"], gram_keys(h, word, self.bits))
                count = np.where(gseen, t["value"][gat], 0).astype(np.float64)
            else:  # (h, w) pairs sorted by h then w: find each h's run, then w inside it
                count = np.zeros(len(ids))
                lo = np.searchsorted(t["context"], h, side="left")
                hi = np.searchsorted(t["context"], h, side="right")
                for i in np.flatnonzero(hi > lo):
                    j = lo[i] + np.searchsorted(t["word"][lo[i]:hi[i]], word[i])
                    if j < hi[i] and t["word"][j] == word[i]:
                        count[i] = t["value"][j]
            d = t["discount"]
            safe = np.maximum(total, 1.0)
            mixed = np.maximum(count - d, 0.0) / safe + d * followers / safe * p
            p = np.where(total > 0, mixed, p)
        return np.log(p)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--train", required=True)
    p.add_argument("--test", required=True)
    p.add_argument("--order", type=int, default=5)
    p.add_argument("--vocab-size", type=int, default=0)
    a = p.parse_args()
    start = time.time()
    index = {START: 0}
    train_ids, train_starts = read_ids(a.train, index)
    test_ids, test_starts = read_ids(a.test, index)
    index.setdefault(UNKNOWN, len(index))
    index.setdefault(END, len(index))
    bits = max(1, (len(index) - 1).bit_length())
    if bits * 4 > 64:
        sys.exit(f"error: {a.train}: {len(index)} token types; at most 65,536 fit the keys")
    size = a.vocab_size or len(index) - 1  # <s> is never predicted
    model = ArrayKneserNey(a.order, size, bits, index[START])
    model.train(train_ids, train_starts)
    logp = model.log_probabilities(test_ids, test_starts)
    loss = -float(logp.sum())
    print(json.dumps({
        "peer": "kneser-ney", "order": a.order, "vocab": size, "perplexity": math.exp(loss / len(test_ids)),
        "tokens": int(len(test_ids)), "unknown_share": float(np.mean(test_ids == index[UNKNOWN])),
        "train_tokens": int(model.train_tokens),
        "ngrams": [int(len(model.tables[m]["value"])) for m in range(1, a.order + 1)],
        "seconds": time.time() - start,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


if __name__ == "__main__":
    main()
