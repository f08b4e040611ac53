#!/bin/sh
# Every reading of docs/CONTEXT.md's "Readings of the built-in model on WiC" table, from the
# PyTorch twin of the built-in model (bench/peers/torch_context_model.py; it agrees with `attn
# embed` to 3e-6 on these sentences). Needs build/bin/attn (for its tokens), torch and numpy, WiC's
# train and dev splits (WIC=folder) and the Wikipedia corpus (CORPUS=enwiki.txt.xz, for the
# whitening statistics). One thread; about 25 minutes on the shared 2-core machine.
#   WIC=../shared/data/wic CORPUS=../shared/data/wikipedia/enwiki.txt.xz WORK=/tmp/wicx PY=/usr/bin/python3 bench/wic_readings/run.sh
set -e
here=$(dirname "$0")
: "${WORK:=/tmp/wicx}" "${PY:=python3}"
export WORK
mkdir -p "$WORK/work"
"$PY" "$here/features.py"    # present and hidden readings at every layer, the output distributions
"$PY" "$here/features2.py"   # partly hidden targets, the sentence mean
"$PY" "$here/features3.py"   # symmetric patterns
"$PY" "$here/wiki_sentences.py"
"${REPO:-$here/../..}/build/bin/attn" embed --threads 1 --model builtin --format json \
  --batch "$WORK/work/wiki_sentences.txt" -o "$WORK/work/wiki.jsonl" 2>/dev/null
"$PY" "$here/wikistats.py"   # hidden and present readings of every token of 2,000 Wikipedia sentences
for n in 1 2 3 4 5 6 8 9 10 11; do "$PY" "$here/run$n.py"; done
"$PY" "$here/run7.py"        # the grid of mixes under the bank/cat bound (train only)
"$PY" "$here/bankcat.py"
