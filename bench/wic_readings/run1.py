from paths import REPO, WORK, WIC, CORPUS  # noqa: F401
from score import *  # noqa: F401,F403 (F, cos_rows, report, results, torch, …)
vis, hid = F["vis"], F["hid"]
NL = vis.shape[1]
report("present, last (default)", cos_rows(vis[:, -1]))
report("hidden, last (--hide-token)", cos_rows(hid[:, -1]))
for k in range(NL - 1):
    report(f"present, layer {k} input" if k == 0 else f"present, after layer {k-1}", cos_rows(vis[:, k]))
for k in range(NL - 1):
    report(f"hidden, input" if k == 0 else f"hidden, after layer {k-1}", cos_rows(hid[:, k]))
cp, ch = cos_rows(vis[:, -1]), cos_rows(hid[:, -1])
for w in [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8]:
    report(f"weighted cosine: {w} present + {1-w:.1f} hidden", {s: w * cp[s] + (1 - w) * ch[s] for s in cp})
report("expected row, hidden dist", cos_rows(F["hexp"]))
report("expected row, present dist", cos_rows(F["vexp"]))
T_w, T_b = F["T_w"], F["T_b"]
report("transform(hidden) (embed_as_words)", cos_rows(hid[:, -1] @ T_w.T + T_b))
report("transform(present)", cos_rows(vis[:, -1] @ T_w.T + T_b))
