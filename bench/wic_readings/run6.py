from paths import REPO, WORK, WIC, CORPUS  # noqa: F401
from score import *  # noqa: F401,F403 (F, cos_rows, report, results, torch, …)
H = torch.load(WORK + "/feat3.pt")
for pi, p in enumerate(H["pats"]):
    for li, ln in enumerate(["after layer 4", "last"]):
        report(f"pattern '{p}' at M, {ln}", cos_rows(H["pat"][:, pi, li]))
