#!/usr/bin/env python3
"""Scores readings from $WORK/feat.pt on WiC: threshold tuned on train, dev reported."""
from paths import REPO, WORK, WIC, CORPUS  # noqa: F401
import sys, math, importlib.machinery, importlib.util
import torch
torch.set_num_threads(1)
loader = importlib.machinery.SourceFileLoader("wic", REPO + "/bench/wic")
spec = importlib.util.spec_from_loader("wic", loader); wic = importlib.util.module_from_spec(spec); loader.exec_module(wic)
F = torch.load(WORK + "/feat.pt")
pairs = F["pairs"]
idx = {s: (torch.tensor([a for a, _, _, _ in P]), torch.tensor([b for _, b, _, _ in P]), [y for _, _, y, _ in P]) for s, P in pairs.items()}

def cos_rows(X):
    """slot readings X [S, D] → per split cosines."""
    Xn = torch.nn.functional.normalize(X.double(), dim=-1)
    return {s: (Xn[a] * Xn[b]).sum(-1) for s, (a, b, _) in idx.items()}

def evaluate(scores, flip=False):
    """scores: split → tensor of similarity; returns (train, dev, threshold)."""
    out = {}
    sc = {s: [(float(c) * (-1 if flip else 1), y) for c, y in zip(scores[s], idx[s][2])] for s in scores}
    th, tr = wic.best_threshold(sc["train"])
    return tr, wic.accuracy(sc["dev"], th), th

results = []
def report(name, scores, **kw):
    tr, dv, th = evaluate(scores, **kw)
    results.append((name, tr, dv, th))
    print(f"{name:60s} train {100*tr:5.1f}  dev {100*dv:5.1f}  th {th:.3f}", flush=True)
    return tr, dv
