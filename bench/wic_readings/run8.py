from paths import REPO, WORK, WIC, CORPUS  # noqa: F401
from score import *  # noqa: F401,F403 (F, cos_rows, report, results, torch, …)
import sys
sys.path.insert(0, REPO + "/bench/peers")
import torch_context_model as tcm
model, index, config = tcm.load(REPO + "/data/context-wikipedia.safetensors", tcm.DEFAULT_VECTORS)
table = model.embedding.weight.detach()
G = torch.load(WORK + "/feat2.pt")
stat = torch.stack([table[index[w]] if w is not None else G["smean"][i, 0] for i, w in enumerate(F["slot_word"])])
nz = lambda X: torch.nn.functional.normalize(X.double(), dim=-1)
h6, p6, x0 = nz(F["hid"][:, -1]), nz(F["vis"][:, -1]), nz(stat)
report("static row (the model's input row)", cos_rows(stat))
for b in (0.5, 0.75, 1.0, 1.5):
    report(f"concat [hidden ; {b}·static row]", cos_rows(torch.cat([h6, b * x0], 1)))
for b in (0.5, 0.75, 1.0):
    report(f"sum hidden^ + {b}·static^", cos_rows(h6 + b * x0))
for b in (0.5, 0.6, 0.75, 1.0):
    report(f"sum hidden^ + {b}·present^", cos_rows(h6 + b * p6))
