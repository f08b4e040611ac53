from paths import REPO, WORK, WIC, CORPUS  # noqa: F401
import sys, json, time, torch
sys.path.insert(0, REPO + "/bench/peers")
import torch_context_model as tcm
torch.set_num_threads(1)
model, index, config = tcm.load(REPO + "/data/context-wikipedia.safetensors", tcm.DEFAULT_VECTORS)
mask = index["<mask>"]
H, P, isword = [], [], []
t0 = time.time()
with torch.inference_mode():
    for line in open(WORK + "/work/wiki.jsonl"):
        toks = json.loads(line).get("tokens", [])
        if not toks: continue
        ids = [index[w] for w in toks]; L = len(ids)
        b = torch.tensor([ids] * L); b[torch.arange(L), torch.arange(L)] = mask
        H.append(model(b)[torch.arange(L), torch.arange(L)])
        P.append(model(torch.tensor([ids]))[0])
        isword += [w.isalpha() for w in toks]
H, P = torch.cat(H).double(), torch.cat(P).double()
print(H.shape, f"{time.time()-t0:.0f}s")
torch.save(dict(H=H, P=P, isword=torch.tensor(isword)), WORK + "/wiki_readings.pt")
