from paths import REPO, WORK, WIC, CORPUS  # noqa: F401
from score import *  # noqa: F401,F403 (F, cos_rows, report, results, torch, …)
import sys, numpy as np
sys.path.insert(0, REPO + "/bench/peers")
import torch_context_model as tcm
tensors, meta = tcm.read_safetensors(REPO + "/data/context-wikipedia.safetensors")
g = torch.from_numpy(np.array(tensors["final_norm.weight"])).double(); b = torch.from_numpy(np.array(tensors["final_norm.bias"])).double()
h6 = F["hid"][:, -1].double(); p6 = F["vis"][:, -1].double()
report("hidden, final norm without its gain and bias", cos_rows((h6 - b) / g))
report("hidden, final norm without its bias", cos_rows(h6 - b))
report("present, final norm without its gain and bias", cos_rows((p6 - b) / g))
# whitening from the train slots' readings (no labels)
tr_slots = torch.unique(torch.cat([idx["train"][0], idx["train"][1]]))
for name, X in (("hidden", h6), ("present", p6)):
    mu = X[tr_slots].mean(0)
    C = torch.cov((X[tr_slots] - mu).T)
    ev, U = torch.linalg.eigh(C)
    ev, U = ev.flip(0), U.flip(1)
    for k in (100, 64, 32):
        W = U[:, :k] / ev[:k].sqrt()
        report(f"{name}, whitened (train sentences' statistics), {k} dims", cos_rows((X - mu) @ W))
