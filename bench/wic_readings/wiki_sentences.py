"""2,000 sentences of the corpus's training part (every 50th of its first lines) for the
whitening statistics: $WORK/work/wiki_sentences.txt."""
from paths import WORK, CORPUS
import lzma, os, re
os.makedirs(WORK + "/work", exist_ok=True)
out = []
with lzma.open(CORPUS, "rt", encoding="utf-8") as f:
    for n, line in enumerate(f):
        if n % 50: continue   # every 50th line of the corpus's first ones (its training part)
        for s in re.split(r"(?<=[.!?]) ", line.strip()):
            if 6 <= len(s.split()) <= 40: out.append(s)
        if len(out) >= 2000: break
open(WORK + "/work/wiki_sentences.txt", "w").write("\n".join(out[:2000]) + "\n")
