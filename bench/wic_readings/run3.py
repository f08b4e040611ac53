from paths import REPO, WORK, WIC, CORPUS  # noqa: F401
from score import *  # noqa: F401,F403 (F, cos_rows, report, results, torch, …)
import itertools
vis, hid = F["vis"], F["hid"]
NL = vis.shape[1]
feats = {}
for k in range(NL):
    feats[f"p{k}"] = cos_rows(vis[:, k]); feats[f"h{k}"] = cos_rows(hid[:, k])
names = list(feats)
X = {s: torch.stack([feats[n][s] for n in names], 1) for s in idx}
Y = {s: torch.tensor(idx[s][2], dtype=torch.float64) for s in idx}
def fit(cols, l2=0.0, steps=3000):
    """Nonnegative weights (softplus) on the chosen cosines + bias, logistic loss on train."""
    Xt = X["train"][:, cols]
    # standardise? no: weights act on raw cosines so the reading is a concatenation
    u = torch.zeros(len(cols), dtype=torch.float64, requires_grad=True)
    b = torch.zeros(1, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.Adam([u, b], lr=0.05)
    for _ in range(steps):
        w = torch.nn.functional.softplus(u) * 10
        z = Xt @ w + b
        loss = torch.nn.functional.binary_cross_entropy_with_logits(z, Y["train"]) + l2 * (w ** 2).sum()
        opt.zero_grad(); loss.backward(); opt.step()
    w = (torch.nn.functional.softplus(u) * 10).detach()
    return w / w.sum()
def mixed(cols, w):
    return {s: X[s][:, cols] @ w for s in idx}
for label, cols in (("all 14", list(range(len(names)))),
                    ("present 7", [names.index(f"p{k}") for k in range(NL)]),
                    ("hidden 7", [names.index(f"h{k}") for k in range(NL)]),
                    ("p6 + hidden 7", [names.index("p6")] + [names.index(f"h{k}") for k in range(NL)]),
                    ("p6 h6", [names.index("p6"), names.index("h6")]),
                    ("h4 h6", [names.index("h4"), names.index("h6")]),
                    ("p6 h4 h6", [names.index("p6"), names.index("h4"), names.index("h6")])):
    w = fit(cols)
    report(f"cosine mix ({label}) " + " ".join(f"{names[c]}:{x:.2f}" for c, x in zip(cols, w)), mixed(cols, w))
