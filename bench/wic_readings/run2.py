from paths import REPO, WORK, WIC, CORPUS  # noqa: F401
from score import *  # noqa: F401,F403 (F, cos_rows, report, results, torch, …)
C = len(F["outputs"]); out_id = {w: i for i, w in enumerate(F["outputs"])}
own = torch.tensor([out_id.get(w, -1) if w is not None else -1 for w in F["slot_word"]])
def dense(ti, tp, k, drop_own=False, renorm=True):
    S = ti.shape[0]
    D = torch.zeros(S, C, dtype=torch.float64)
    D.scatter_(1, ti[:, :k], tp[:, :k].double())
    if drop_own:
        m = own >= 0
        D[m, own[m]] = 0
    if renorm:
        D = D / D.sum(1, keepdim=True)
    return D
def pair_stats(D, fn):
    return {s: fn(D[a], D[b]) for s, (a, b, _) in idx.items()}
def js(P, Q):
    M = (P + Q) / 2
    def kl(A, B):
        r = torch.where(A > 0, A * (torch.log(A.clamp_min(1e-30)) - torch.log(B.clamp_min(1e-30))), torch.zeros_like(A))
        return r.sum(-1)
    return -(kl(P, M) + kl(Q, M)) / 2   # negative: higher = more similar
cos = lambda P, Q: torch.nn.functional.cosine_similarity(P, Q, dim=-1)
bc = lambda P, Q: (P.sqrt() * Q.sqrt()).sum(-1)   # Bhattacharyya coefficient
rows = F["out_rows"].double()
for which, ti, tp in (("hidden", F["htop_i"], F["htop_p"]), ("present", F["vtop_i"], F["vtop_p"])):
    for k in (10, 50, 200):
        for drop in ((False, True) if which == "present" else (False,)):
            D = dense(ti, tp, k, drop_own=drop)
            tag = f"{which} dist top{k}{' without the word' if drop else ''}"
            report(tag + ": cosine", pair_stats(D, cos))
            report(tag + ": Bhattacharyya", pair_stats(D, bc))
            report(tag + ": -JS", pair_stats(D, js))
            report(tag + ": expected row", cos_rows(D @ rows))
