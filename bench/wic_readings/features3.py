import os
REPO = os.environ.get("REPO", os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
WORK = os.environ.get("WORK", "/tmp/wicx")
WIC = os.environ.get("WIC", os.path.join(REPO, "..", "shared", "data", "wic"))
CORPUS = os.environ.get("CORPUS", os.path.join(REPO, "..", "shared", "data", "wikipedia", "enwiki.txt.xz"))
#!/usr/bin/env python3
"""Computes, with the PyTorch twin of the built-in model, many readings of each WiC target
(train + dev): symmetric patterns ("w and <mask>"); saves $WORK/feat3.pt."""
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
