import os
REPO = os.environ.get("REPO", os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
WORK = os.environ.get("WORK", "/tmp/wicx")
WIC = os.environ.get("WIC", os.path.join(REPO, "..", "shared", "data", "wic"))
CORPUS = os.environ.get("CORPUS", os.path.join(REPO, "..", "shared", "data", "wikipedia", "enwiki.txt.xz"))
#!/usr/bin/env python3
"""Computes, with the PyTorch twin of the built-in model, many readings of each WiC target
(train + dev), and saves them for scoring: $WORK/feat.pt."""
import importlib.machinery, importlib.util, json, os, subprocess, sys, time
import numpy as np, torch
REPO = sys.argv[1] if len(sys.argv) > 1 else REPO
torch.set_num_threads(1)
sys.path.insert(0, os.path.join(REPO, "bench/peers"))
import torch_context_model as tcm
loader = importlib.machinery.SourceFileLoader("wic", os.path.join(REPO, "bench/wic"))
spec = importlib.util.spec_from_loader("wic", loader); wic = importlib.util.module_from_spec(spec); loader.exec_module(wic)

DATA = WIC
splits = {s: wic.read_split(DATA, s) for s in ("train", "dev")}
sentences = sorted({p[k] for sp in splits.values() for p in sp for k in ("s1", "s2")})
attn = os.path.join(REPO, "build/bin/attn")
os.makedirs(WORK + "/work", exist_ok=True)
src = WORK + "/work/sentences.txt"
open(src, "w").write("".join(s + "\n" for s in sentences))
out = WORK + "/work/visible.jsonl"
if not os.path.exists(out):
    subprocess.run([attn, "embed", "--threads", "1", "--model", "builtin", "--format", "json", "--batch", src, "-o", out], check=True)
records = [json.loads(l) for l in open(out)]
tokens = [r.get("tokens", []) for r in records]
attn_rows = [r.get("embeddings", []) for r in records]

model_path = os.path.join(REPO, "data/context-wikipedia.safetensors")
model, index, config = tcm.load(model_path, tcm.DEFAULT_VECTORS)
tensors, meta = tcm.read_safetensors(model_path)
outputs = json.loads(meta["outputs"])
table = model.embedding.weight.detach()
out_rows = table[torch.tensor([index[w] for w in outputs])]          # [C, E]
T_w = torch.from_numpy(np.array(tensors["output.transform.weight"])); T_b = torch.from_numpy(np.array(tensors["output.transform.bias"]))
b2 = torch.from_numpy(np.array(tensors["output.bias"]))
K_w = torch.from_numpy(np.array(tensors["output.clusters.weight"])); K_b = torch.from_numpy(np.array(tensors["output.clusters.bias"]))
cuts = config["adaptive_cutoffs"]
mask_id = index["<mask>"]

def log_probs(y):
    """y [R, E] (after final norm) → log p [R, C], as the adaptive softmax reads it."""
    pre = y @ T_w.T + T_b
    s = pre @ out_rows.T + b2
    tok = pre @ K_w.T + K_b
    head = torch.cat([s[:, :cuts[0]], tok], 1)
    lh = head - torch.logsumexp(head, 1, keepdim=True)
    parts = [lh[:, :cuts[0]]]
    for i in range(len(cuts) - 1):
        c = s[:, cuts[i]:cuts[i + 1]]
        parts.append(lh[:, cuts[0] + i:cuts[0] + i + 1] + c - torch.logsumexp(c, 1, keepdim=True))
    return torch.cat(parts, 1), pre

def layers_of(ids):
    """ids [B, L] → list of [B, L, E]: input (emb+pos), each layer's output (the last after final norm),
    plus the last layer's output before the final norm is not kept."""
    x = model.embedding(ids) + model.position[:ids.shape[1]]
    outs = [x]
    for layer in model.layers:
        x = layer(x)
        outs.append(x)
    outs[-1] = model.final_norm(x)
    return outs

# Targets: (sentence, token index or None) per pair side.
def tindex(s, i, w):
    return wic.target_index(tokens[sentences.index(s)] if False else tokens[where[s]], s.split(" "), i, w)
where = {s: n for n, s in enumerate(sentences)}
slot_word = []
wanted = {}   # (sentence id, t) → slot
for sp in splits.values():
    for p in sp:
        for s, i in ((p["s1"], p["i"]), (p["s2"], p["j"])):
            t = tindex(s, i, p["word"])
            if (where[s], t) not in wanted:
                wanted[(where[s], t)] = len(wanted)
                slot_word.append(tokens[where[s]][t] if t is not None else None)
print(len(sentences), "sentences,", len(wanted), "targets", file=sys.stderr)

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
