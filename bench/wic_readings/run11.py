from paths import REPO, WORK, WIC, CORPUS  # noqa: F401
from score import *  # noqa: F401,F403 (F, cos_rows, report, results, torch, …)
Wk = torch.load(WORK + "/wiki_readings.pt")
h6 = F["hid"][:, -1].double(); p6 = F["vis"][:, -1].double()
def whitener(X, k=100):
    mu = X.mean(0); ev, U = torch.linalg.eigh(torch.cov((X - mu).T)); ev, U = ev.flip(0), U.flip(1)
    return mu, U[:, :k] / ev[:k].sqrt()
n = len(Wk["H"])
for label, sel in (("first half", slice(0, n // 2)), ("second half", slice(n // 2, n)), ("first 10,000 tokens", slice(0, 10000))):
    mu, W = whitener(Wk["H"][sel]); report(f"hidden, whitened by Wikipedia's {label}", cos_rows((h6 - mu) @ W))
mu = Wk["H"].mean(0); report("hidden, centred by Wikipedia's mean", cos_rows(h6 - mu))
sd = Wk["H"].std(0); report("hidden, standardised per dimension by Wikipedia", cos_rows((h6 - mu) / sd))
