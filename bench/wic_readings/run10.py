from paths import REPO, WORK, WIC, CORPUS  # noqa: F401
from score import *  # noqa: F401,F403 (F, cos_rows, report, results, torch, …)
Wk = torch.load(WORK + "/wiki_readings.pt")
h6 = F["hid"][:, -1].double(); p6 = F["vis"][:, -1].double()
nz = lambda X: torch.nn.functional.normalize(X, dim=-1)
def whitener(X, k):
    mu = X.mean(0); ev, U = torch.linalg.eigh(torch.cov((X - mu).T)); ev, U = ev.flip(0), U.flip(1)
    return mu, U[:, :k] / ev[:k].sqrt()
out = {}
for src, sel in (("all tokens", torch.ones(len(Wk["isword"]), dtype=torch.bool)), ("word tokens", Wk["isword"])):
    for k in (100, 64):
        mu, W = whitener(Wk["H"][sel], k); hw = (h6 - mu) @ W
        report(f"hidden, whitened by Wikipedia's {src} (2,000 sentences), {k} dims", cos_rows(hw))
        mu2, W2 = whitener(Wk["P"][sel], k); pw = (p6 - mu2) @ W2
        report(f"present, whitened by Wikipedia's {src}, {k} dims", cos_rows(pw))
        out[(src, k)] = (hw, pw)
hw, pw = out[("all tokens", 100)]
ch, cp = cos_rows(hw), cos_rows(pw)
for w in (0.2, 0.25, 0.3, 0.4):
    report(f"concat whitened [hidden ; present], present share {w}", {s: (1 - w) * ch[s] + w * cp[s] for s in ch})
cp0 = cos_rows(p6)
for w in (0.25, 0.3):
    report(f"concat [whitened hidden ; present], present share {w}", {s: (1 - w) * ch[s] + w * cp0[s] for s in ch})
torch.save(dict(stats={k: whitener(Wk["H"], 100) for k in ["h"]}), WORK + "/whiten.pt")
