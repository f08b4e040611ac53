from paths import REPO, WORK, WIC, CORPUS  # noqa: F401
from score import *  # noqa: F401,F403 (F, cos_rows, report, results, torch, …)
import os, sys, json, numpy as np
sys.path.insert(0, REPO + "/bench/peers")
import torch_context_model as tcm
model, index, config = tcm.load(REPO + "/data/context-wikipedia.safetensors", tcm.DEFAULT_VECTORS)
table = model.embedding.weight.detach().double()
tensors, meta = tcm.read_safetensors(REPO + "/data/context-wikipedia.safetensors")
T_w, T_b = F["T_w"].double(), F["T_b"].double()
rows = F["out_rows"].double()
b2 = torch.from_numpy(np.array(tensors["output.bias"])).double()
K_w = torch.from_numpy(np.array(tensors["output.clusters.weight"])).double(); K_b = torch.from_numpy(np.array(tensors["output.clusters.bias"])).double()
cuts = config["adaptive_cutoffs"]
def log_probs(y):
    pre = y @ T_w.T + T_b
    s = pre @ rows.T + b2
    tok = pre @ K_w.T + K_b
    head = torch.cat([s[:, :cuts[0]], tok], 1)
    lh = head - torch.logsumexp(head, 1, keepdim=True)
    parts = [lh[:, :cuts[0]]]
    for i in range(len(cuts) - 1):
        c = s[:, cuts[i]:cuts[i + 1]]
        parts.append(lh[:, cuts[0] + i:cuts[0] + i + 1] + c - torch.logsumexp(c, 1, keepdim=True))
    return torch.cat(parts, 1)
LH = log_probs(F["hid"][:, -1].double())
LV = log_probs(F["vis"][:, -1].double())
C = rows.shape[0]
out_id = {w: i for i, w in enumerate(F["outputs"])}
own = torch.tensor([out_id.get(w, -1) if w is not None else -1 for w in F["slot_word"]])
trow = torch.stack([table[index[w]] if w is not None else torch.zeros(table.shape[1], dtype=torch.float64) for w in F["slot_word"]])
rn = torch.nn.functional.normalize(rows, dim=-1)
simT = torch.nn.functional.normalize(trow, dim=-1) @ rn.T        # [S, C] cos(target, w)
known = torch.tensor([w is not None for w in F["slot_word"]])
def pstats(D, fn): return {s: fn(D[a], D[b]) for s, (a, b, _) in idx.items()}
bc = lambda P, Q: (P.sqrt() * Q.sqrt()).sum(-1)
cos = lambda P, Q: torch.nn.functional.cosine_similarity(P, Q, dim=-1)
m = own >= 0
for beta in (0, 2, 5, 10, 20):
    Z = LH + beta * simT
    Z[m, own[m]] = -1e9   # the word itself is not its own substitute
    P = torch.softmax(Z, 1)
    report(f"subst: log p_hid + {beta}·cos(w,target), BC", pstats(P, bc))
    report(f"subst: log p_hid + {beta}·cos(w,target), expected row", cos_rows(P @ rows))
for lam in (0.25, 0.5, 1.0):
    Z = LH + lam * LV
    Z[m, own[m]] = -1e9
    P = torch.softmax(Z, 1)
    report(f"subst: log p_hid + {lam}·log p_present, BC", pstats(P, bc))
    report(f"subst: log p_hid + {lam}·log p_present, expected row", cos_rows(P @ rows))
