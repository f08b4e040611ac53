import os
REPO = os.environ.get("REPO", os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
WORK = os.environ.get("WORK", "/tmp/wicx")
WIC = os.environ.get("WIC", os.path.join(REPO, "..", "shared", "data", "wic"))
CORPUS = os.environ.get("CORPUS", os.path.join(REPO, "..", "shared", "data", "wikipedia", "enwiki.txt.xz"))
exec(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "score.py")).read())
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
