import os
os.makedirs(WORK + "/work", exist_ok=True)
REPO = os.environ.get("REPO", os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
WORK = os.environ.get("WORK", "/tmp/wicx")
WIC = os.environ.get("WIC", os.path.join(REPO, "..", "shared", "data", "wic"))
CORPUS = os.environ.get("CORPUS", os.path.join(REPO, "..", "shared", "data", "wikipedia", "enwiki.txt.xz"))
import lzma, re
out = []
with lzma.open(CORPUS, "rt", encoding="utf-8") as f:
    for n, line in enumerate(f):
        if n % 50: continue   # every 50th line of the corpus's first ones (its training part)
        for s in re.split(r"(?<=[.!?]) ", line.strip()):
            if 6 <= len(s.split()) <= 40: out.append(s)
        if len(out) >= 2000: break
open(WORK + "/work/wiki_sentences.txt", "w").write("\n".join(out[:2000]) + "\n")
