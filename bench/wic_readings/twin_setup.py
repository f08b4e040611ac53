"""The PyTorch twin of the built-in context model and WiC's targets, shared by features*.py:
the twin loaded from data/context-wikipedia.safetensors, WiC's train and dev sentences tokenised
by `attn embed` (whose rows the twin is checked against), and every target's slot."""
from paths import REPO, WORK, WIC, CORPUS  # noqa: F401
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

