#!/usr/bin/env python3
"""Computes, with the PyTorch twin of the built-in model, many readings of each WiC target
(train + dev): readings partly hidden and the sentence mean; saves $WORK/feat2.pt."""
from twin_setup import *  # noqa: F401,F403 (the twin, WiC's targets, torch, np, …)

NL = config["layers"] + 1
E = config["dim"]
ALPHAS = [0.25, 0.5, 0.75]
part = torch.zeros(len(wanted), len(ALPHAS), 3, E)   # alpha × (after layer 3, after layer 4, last)
smean = torch.zeros(len(wanted), 2, E)               # sentence mean of present rows: input, last
by_sentence = {}
for (n, t), slot in wanted.items():
    by_sentence.setdefault(n, []).append((t, slot))
start = time.time()
mrow = model.embedding.weight[mask_id]
with torch.inference_mode():
    for k, (n, items) in enumerate(sorted(by_sentence.items())):
        ids = [index[w] for w in tokens[n]]
        L = len(ids)
        if L == 0:
            continue
        v = layers_of(torch.tensor([ids]))
        need_all = any(t is None for t, _ in items)
        positions = list(range(L)) if need_all else sorted({t for t, _ in items})
        P = len(positions)
        x0 = model.embedding(torch.tensor([ids] * P)) + model.position[:L]
        res = []
        for a in ALPHAS:
            x = x0.clone()
            for r, t in enumerate(positions):
                x[r, t] = a * model.embedding.weight[ids[t]] + (1 - a) * mrow + model.position[t]
            outs = []
            for li, layer in enumerate(model.layers):
                x = layer(x)
                if li in (3, 4): outs.append(x[torch.arange(P), positions])
            outs.append(model.final_norm(x)[torch.arange(P), positions])
            res.append(torch.stack(outs, 1))        # [P, 3, E]
        res = torch.stack(res, 1)                   # [P, A, 3, E]
        sm = torch.stack([v[0][0].mean(0), v[-1][0].mean(0)])
        for t, slot in items:
            part[slot] = res.mean(0) if t is None else res[positions.index(t)]
            smean[slot] = sm
        if k % 2000 == 0:
            print(k, f"{time.time()-start:.0f}s", file=sys.stderr)
torch.save(dict(part=part, smean=smean, alphas=ALPHAS), WORK + "/feat2.pt")
print("done", file=sys.stderr)
