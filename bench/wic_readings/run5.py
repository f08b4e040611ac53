from paths import REPO, WORK, WIC, CORPUS  # noqa: F401
from score import *  # noqa: F401,F403 (F, cos_rows, report, results, torch, …)
G = torch.load(WORK + "/feat2.pt")
part, smean = G["part"], G["smean"]
for ai, a in enumerate(G["alphas"]):
    for li, ln in enumerate(["after layer 3", "after layer 4", "last"]):
        report(f"partly hidden: {a}·word + {1-a}·mask, {ln}", cos_rows(part[:, ai, li]))
report("sentence mean, input rows", cos_rows(smean[:, 0]))
report("sentence mean, present last", cos_rows(smean[:, 1]))
ch = cos_rows(F["hid"][:, -1])
cs = cos_rows(smean[:, 1])
for w in (0.1, 0.2, 0.3):
    report(f"{1-w} hidden + {w} sentence mean (cosines)", {s: (1 - w) * ch[s] + w * cs[s] for s in ch})
