import os
REPO = os.environ.get("REPO", os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
WORK = os.environ.get("WORK", "/tmp/wicx")
WIC = os.environ.get("WIC", os.path.join(REPO, "..", "shared", "data", "wic"))
CORPUS = os.environ.get("CORPUS", os.path.join(REPO, "..", "shared", "data", "wikipedia", "enwiki.txt.xz"))
exec(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "score.py")).read())
H = torch.load(WORK + "/feat3.pt")
for pi, p in enumerate(H["pats"]):
    for li, ln in enumerate(["after layer 4", "last"]):
        report(f"pattern '{p}' at M, {ln}", cos_rows(H["pat"][:, pi, li]))
