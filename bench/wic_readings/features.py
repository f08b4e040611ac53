#!/usr/bin/env python3
"""Computes, with the PyTorch twin of the built-in model, many readings of each WiC target
(train + dev), and saves them for scoring: $WORK/feat.pt."""
from twin_setup import *  # noqa: F401,F403 (the twin, WiC's targets, torch, np, …)
# Per target: visible layers (7 × E), hidden layers (7 × E), visible & hidden pre (E), expected rows (E),
# top-k distributions sparse. For t None: the mean over the sentence's tokens of each reading.
NL = config["layers"] + 1
E = config["dim"]
vis = torch.zeros(len(wanted), NL, E); hid = torch.zeros(len(wanted), NL, E)
vexp = torch.zeros(len(wanted), E); hexp = torch.zeros(len(wanted), E)
TOPK = 200
htop_i = torch.zeros(len(wanted), TOPK, dtype=torch.long); htop_p = torch.zeros(len(wanted), TOPK)
vtop_i = torch.zeros(len(wanted), TOPK, dtype=torch.long); vtop_p = torch.zeros(len(wanted), TOPK)
maxdiff = 0.0
start = time.time()
by_sentence = {}
for (n, t), slot in wanted.items():
    by_sentence.setdefault(n, []).append((t, slot))
with torch.inference_mode():
    for k, (n, items) in enumerate(sorted(by_sentence.items())):
        ids = [index[w] for w in tokens[n]]
        L = len(ids)
        if L == 0:
            continue
        v = layers_of(torch.tensor([ids]))
        if attn_rows[n]:
            maxdiff = max(maxdiff, float((v[-1][0] - torch.tensor(attn_rows[n])).abs().max()))
        need_all = any(t is None for t, _ in items)
        positions = list(range(L)) if need_all else sorted({t for t, _ in items})
        b = torch.tensor([ids] * len(positions))
        for r, t in enumerate(positions):
            b[r, t] = mask_id
        h = layers_of(b)
        # rows of the readings at each position
        vrows = torch.stack([x[0, positions] for x in v], 1)          # [P, NL, E]
        hrows = torch.stack([x[torch.arange(len(positions)), positions] for x in h], 1)
        vl, _ = log_probs(vrows[:, -1]); hl, _ = log_probs(hrows[:, -1])
        vp, hp = vl.exp(), hl.exp()
        ve, he = vp @ out_rows, hp @ out_rows
        for t, slot in items:
            if t is None:
                sel = slice(None)
                vis[slot] = vrows.mean(0); hid[slot] = hrows.mean(0); vexp[slot] = ve.mean(0); hexp[slot] = he.mean(0)
                pv, ph = vp.mean(0), hp.mean(0)
            else:
                r = positions.index(t)
                vis[slot] = vrows[r]; hid[slot] = hrows[r]; vexp[slot] = ve[r]; hexp[slot] = he[r]
                pv, ph = vp[r], hp[r]
            tp, ti = ph.topk(TOPK); htop_i[slot] = ti; htop_p[slot] = tp
            tp, ti = pv.topk(TOPK); vtop_i[slot] = ti; vtop_p[slot] = tp
        if k % 1000 == 0:
            print(k, len(by_sentence), f"{time.time()-start:.0f}s", "maxdiff", maxdiff, file=sys.stderr)
pairs = {s: [(wanted[(where[p["s1"]], tindex(p["s1"], p["i"], p["word"]))],
              wanted[(where[p["s2"]], tindex(p["s2"], p["j"], p["word"]))], p["same"],
              tindex(p["s1"], p["i"], p["word"]) is None or tindex(p["s2"], p["j"], p["word"]) is None)
             for p in sp] for s, sp in splits.items()}
torch.save(dict(vis=vis, hid=hid, vexp=vexp, hexp=hexp, htop_i=htop_i, htop_p=htop_p, vtop_i=vtop_i,
                vtop_p=vtop_p, pairs=pairs, slot_word=slot_word, outputs=outputs, out_rows=out_rows, T_w=T_w, T_b=T_b), WORK + "/feat.pt")
print("done", f"{time.time()-start:.0f}s maxdiff {maxdiff}", file=sys.stderr)
