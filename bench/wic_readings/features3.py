#!/usr/bin/env python3
"""Computes, with the PyTorch twin of the built-in model, many readings of each WiC target
(train + dev): symmetric patterns ("w and <mask>"); saves $WORK/feat3.pt."""
from twin_setup import *  # noqa: F401,F403 (the twin, WiC's targets, torch, np, …)

NL = config["layers"] + 1
E = config["dim"]
and_id = index["and"]; or_id = index["or"]
PATS = ["w and M", "M and w", "w or M", "w , M"]
pat = torch.zeros(len(wanted), len(PATS), 2, E)   # pattern × (after layer 4, last) at the mask
by_sentence = {}
for (n, t), slot in wanted.items():
    by_sentence.setdefault(n, []).append((t, slot))
start = time.time()
comma = index[","]
with torch.inference_mode():
    for k, (n, items) in enumerate(sorted(by_sentence.items())):
        ids = [index[w] for w in tokens[n]]
        L = len(ids)
        if L == 0:
            continue
        need_all = any(t is None for t, _ in items)
        positions = list(range(L)) if need_all else sorted({t for t, _ in items})
        P = len(positions)
        res = []
        for p in PATS:
            seqs, at = [], []
            for t in positions:
                if p == "w and M": ins, m = [ids[t], and_id, mask_id], 2
                elif p == "M and w": ins, m = [mask_id, and_id, ids[t]], 0
                elif p == "w or M": ins, m = [ids[t], or_id, mask_id], 2
                else: ins, m = [ids[t], comma, mask_id], 2
                s = ids[:t] + ins + ids[t + 1:]
                off = max(0, len(s) - 64)     # attn keeps the last 64 tokens
                seqs.append(s[off:]); at.append(t + m - off)
            Lmax = max(len(s) for s in seqs)
            assert all(len(s) == Lmax for s in seqs)
            h = layers_of(torch.tensor(seqs))
            ar = torch.arange(P)
            res.append(torch.stack([h[5][ar, at], h[-1][ar, at]], 1))
        res = torch.stack(res, 1)     # [P, pats, 2, E]
        for t, slot in items:
            pat[slot] = res.mean(0) if t is None else res[positions.index(t)]
        if k % 2000 == 0:
            print(k, f"{time.time()-start:.0f}s", file=sys.stderr)
torch.save(dict(pat=pat, pats=PATS), WORK + "/feat3.pt")
print("done", file=sys.stderr)
