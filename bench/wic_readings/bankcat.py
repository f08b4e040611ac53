from paths import REPO, WORK, WIC, CORPUS  # noqa: F401
import sys, torch
sys.path.insert(0, REPO + "/bench/peers")
import torch_context_model as tcm
torch.set_num_threads(1)
model, index, config = tcm.load(REPO + "/data/context-wikipedia.safetensors", tcm.DEFAULT_VECTORS)
mask = index["<mask>"]
def run(ids):
    x = model.embedding(torch.tensor([ids])) + model.position[:len(ids)]
    outs = [x]
    for l in model.layers:
        x = l(x); outs.append(x)
    outs[-1] = model.final_norm(x)
    return [o[0] for o in outs]
def readings(words, t):
    ids = [index[w] for w in words]
    v = run(ids)
    h = ids.copy(); h[t] = mask
    hv = run(h)
    q = run(ids)  # partial
    x = model.embedding(torch.tensor([ids])) + model.position[:len(ids)]
    x[0, t] = 0.25 * model.embedding.weight[ids[t]] + 0.75 * model.embedding.weight[mask] + model.position[t]
    for l in model.layers: x = l(x)
    q = model.final_norm(x)[0]
    po = ids[:t] + [ids[t], index["or"], mask] + ids[t + 1:]
    pov = run(po)
    return {"p6": v[-1][t], "h6": hv[-1][t], "h4": hv[4][t], "sm": v[-1].mean(0), "q25": q[t], "po": pov[-1][t + 2]}
with torch.inference_mode():
    s = "he sat on the {} of the river .".split()
    A = readings([w.format("bank") for w in s], 4); B = readings([w.format("cat") for w in s], 4)
    for k in A:
        print(k, "bank/cat", round(float(torch.nn.functional.cosine_similarity(A[k], B[k], dim=0)), 3))
    mu, W = torch.load(WORK + "/whiten.pt")["stats"]["h"]
    nz = lambda x: torch.nn.functional.normalize(x.double(), dim=0)
    for share in (0.25, 0.3):
        beta = (share / (1 - share)) ** 0.5
        r = lambda R: torch.cat([nz((R["h6"].double() - mu) @ W), beta * nz(R["p6"])])
        print("concat [whitened hidden ; present] share", share, "bank/cat",
              round(float(torch.nn.functional.cosine_similarity(r(A), r(B), dim=0)), 3))
