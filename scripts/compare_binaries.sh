#!/usr/bin/env bash
# Runs the same training and inference commands with two attn binaries and says, for each, whether
# their outputs are identical byte for byte; exit 1 on any difference. For a refactor that must
# change no byte (issue #53):
#   scripts/compare_binaries.sh OLD_ATTN NEW_ATTN
# Trainings: every task, --shards 2, --dtype bf16, --stop-after-steps then --resume (and the new
# binary resuming the old one's checkpoint), --save-steps snapshots, more shapes than
# tests/cli/test_training_bytes.py; each model, snapshot and stopped run's checkpoint compared
# (the checkpoint without its seconds trained and random run id).
# Inference: every case of tests/data/fixtures/fixture_cases.py on the committed fixture models,
# and a set of them on each freshly trained model (OLD's), compared on exit code, stdout, stderr
# and files written. Both binaries run on this machine's best kernels (no ATTN_ISA) and, for the
# fixture models, on the portable AVX2 ones too. About two and a half minutes on two busy cores.
# attn-mpi is not run here: tests/mpi/test_training_bytes_mpi.py holds it to the recorded bytes.
set -euo pipefail
if [ $# -ne 2 ]; then
  echo "usage: scripts/compare_binaries.sh OLD_ATTN NEW_ATTN" >&2
  exit 1
fi
for bin in "$1" "$2"; do
  if [ ! -x "$bin" ]; then
    echo "error: $bin: not an executable, give the attn binaries to compare" >&2
    exit 1
  fi
done
ROOT=$(cd "$(dirname "$0")/.." && pwd)
exec /usr/bin/python3 - "$(realpath "$1")" "$(realpath "$2")" "$ROOT/tests/data/fixtures" <<'EOF'
import hashlib
import os
import re
import shutil
import struct
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

OLD, NEW, FIXTURES = sys.argv[1:4]
sys.path.insert(0, FIXTURES)
import fixture_cases  # noqa: E402
import training_cases  # noqa: E402

NEG = training_cases.NEG
CORPUS = training_cases.CORPUS
# Beyond training_cases.TRAININGS: GloVe with layers, frozen embeddings, a vectors file, window
# and pooling variants, masked-word's batching options, evaluation cadence, checkpoints, snapshots.
EXTRA = [
    ("classify_glove_layer1_frozen", ["--task", "classify", *NEG, "--epochs", "2", "--seed", "11", "--layers", "1",
                                      "--frozen-embeddings", "--window", "0", "--pool", "mean+max",
                                      "--feedforward", "16", "--hidden", "8"]),
    ("classify_vectors_file_shards2", ["--task", "classify", *NEG, "--epochs", "2", "--seed", "12", "--vectors",
                                       "data/vectors8.txt", "--layers", "1", "--pool", "mean", "--shards", "2",
                                       "--batch", "16", "--dropout", "0.1"]),
    ("classify_window5_lr", ["--task", "classify", *NEG, "--epochs", "3", "--seed", "13", "--learn-embeddings", "12",
                             "--heads", "3", "--window", "5", "--lr", "0.003", "--weight-decay", "0", "--clip", "0.5",
                             "--warmup", "0.2", "--patience", "1"]),
    ("next_word_glove_layers2", ["--task", "next-word", *CORPUS, "--epochs", "2", "--seed", "14", "--layers", "2",
                                 "--norm-first", "--positions", "--feedforward", "8", "--min-count", "2"]),
    ("next_word_window_shards2", ["--task", "next-word", *CORPUS, "--epochs", "2", "--seed", "15",
                                  "--learn-embeddings", "16", "--window", "3", "--pool", "attention", "--shards", "2"]),
    ("masked_word_glove", ["--task", "masked-word", *CORPUS, "--epochs", "2", "--seed", "16", "--layers", "1",
                           "--feedforward", "16", "--outputs", "25", "--max-length", "24", "--mask", "0.25"]),
    ("masked_word_group_by_length_shards2", ["--task", "masked-word", *CORPUS, "--epochs", "2", "--seed", "17",
                                             "--learn-embeddings", "16", "--layers", "2", "--group-by-length",
                                             "--max-length", "24", "--shards", "2", "--eval-steps", "5"]),
    ("masked_word_pack_bf16_shards2", ["--task", "masked-word", *CORPUS, "--epochs", "2", "--seed", "18",
                                       "--learn-embeddings", "16", "--layers", "1", "--pack-sentences",
                                       "--max-length", "24", "--dtype", "bf16", "--shards", "2",
                                       "--drop-final-stop", "0.5"]),
    ("masked_word_adaptive_save_steps", ["--task", "masked-word", *CORPUS, "--epochs", "2", "--seed", "19",
                                         "--learn-embeddings", "16", "--layers", "1", "--adaptive-softmax", "8,20",
                                         "--max-length", "24", "--eval-steps", "4", "--save-steps", "8"]),
    ("masked_word_adaptive_shards2+resume", ["--task", "masked-word", *CORPUS, "--epochs", "2", "--seed", "20",
                                             "--learn-embeddings", "16", "--layers", "1", "--adaptive-softmax",
                                             "8,20", "--max-length", "24", "--shards", "2",
                                             "--checkpoint-steps", "3"]),
    ("lm_vocab_unk_max_tokens", ["--task", "lm", *CORPUS, "--seed", "21", "--learn-embeddings", "16", "--layers", "2",
                                 "--context", "16", "--batch", "8", "--vocab", "20", "--max-tokens", "5000",
                                 "--eval-steps", "10", "--save-steps", "20"]),
    ("lm_adaptive_shards2_bf16", ["--task", "lm", *CORPUS, "--epochs", "2", "--seed", "22", "--learn-embeddings", "16",
                                  "--layers", "1", "--context", "16", "--batch", "8", "--adaptive-softmax", "6,16",
                                  "--shards", "2", "--dtype", "bf16"]),
    ("lm_bf16_shards2+resume", ["--task", "lm", *CORPUS, "--epochs", "2", "--seed", "23", "--learn-embeddings", "16",
                                "--layers", "2", "--norm-first", "--context", "16", "--batch", "8", "--dtype", "bf16",
                                "--shards", "2", "--checkpoint-steps", "4"]),
]
TRAININGS = training_cases.TRAININGS + EXTRA
# The queries asked of each freshly trained model (a subset of fixture_cases' per-model cases).
FRESH_QUERIES = {"predict0", "predict_batch", "eval", "eval_every5", "embed_npy", "embed_batch_json",
                 "embed_layer0", "embed_hide_token", "heatmap_html", "generate_topk", "generate_greedy",
                 "tokenize"}

results = []  # (what, identical?)


def report(what, same):
    results.append((what, same))
    print(f"{'identical' if same else 'DIFFERENT'}  {what}", flush=True)


def files_of(folder):
    """Every model, snapshot and checkpoint file a training left, by name, as its digest. A
    checkpoint's progress holds the seconds trained and a random run id, which differ from run to
    run of one binary: those two values are blanked before the digest."""
    def content(name):
        data = open(os.path.join(folder, name), "rb").read()
        if name.endswith("checkpoint"):
            # src/train/checkpoint.cpp: a magic line, the JSON head's length (u64 LE), the head, arrays.
            magic = data.index(b"\n") + 1
            length = struct.unpack_from("<Q", data, magic)[0]
            head = data[magic + 8:magic + 8 + length]
            head = re.sub(rb'"seconds":[^,}]*', b'"seconds":_', head)
            head = re.sub(rb'"run":"[^"]*"', b'"run":_', head)
            data = data[:magic] + head + data[magic + 8 + length:]
        return hashlib.sha256(data).hexdigest()
    return {n: content(n) for n in sorted(os.listdir(folder)) if ".safetensors" in n or "checkpoint" in n}


def train_both(case):
    cid, argv = case
    got = []
    for bin_, side in ((OLD, "old"), (NEW, "new")):
        folder = os.path.join(WORK, "train", side, cid.replace("+", "_"))
        fixture_cases.scratch(folder)
        try:
            # The CPU's own bf16 products (AVX512-BF16 where it has them), unlike the tests.
            training_cases.train(bin_, cid, argv, "", folder, env_extra={"ATTN_BF16": ""})
            got.append(files_of(folder))
        except RuntimeError as e:
            got.append({"error": str(e).split(": exit ")[-1]})
    if cid.endswith("+resume"):
        # Old checkpoints stay readable: the new binary resumes the old one's stopped run.
        folder = os.path.join(WORK, "train", "cross", cid.replace("+", "_"))
        fixture_cases.scratch(folder)
        try:
            training_cases.train(OLD, cid, argv, "", folder, env_extra={"ATTN_BF16": ""}, resume_with=NEW)
            cross = files_of(folder)
        except RuntimeError as e:
            cross = {"error": str(e).split(": exit ")[-1]}
        got.append(cross)
    return cid, got


def layers_of(argv):
    return int(argv[argv.index("--layers") + 1]) if "--layers" in argv else 0


def task_of(argv):
    return argv[argv.index("--task") + 1]


def run_both(item):
    cid, argv, out, isa, models = item
    got = []
    for bin_, side in ((OLD, "old"), (NEW, "new")):
        place = os.path.join(WORK, "run", side, isa or "native", cid.replace("/", "__"))
        fixture_cases.scratch(place)
        if models:
            os.remove(os.path.join(place, "models"))
            os.symlink(models, os.path.join(place, "models"))
        got.append(fixture_cases.run_case(bin_, argv, out, isa or "", place))
    return cid, isa or "native", got


# ATTN_ISA="" (isa "" below) is no choice: isa.cpp keeps the CPU's best for a value it does not know.
WORK = tempfile.mkdtemp(prefix="attn_compare_")
try:
    with ThreadPoolExecutor(2) as pool:
        trained = list(pool.map(train_both, TRAININGS))
    fresh = os.path.join(WORK, "fresh_models")
    os.makedirs(fresh)
    fresh_cases = []
    for cid, (old, new, *cross) in trained:
        same = old == new
        report(f"train {cid}: {', '.join(old) if 'error' not in old else old['error']}", same)
        if cross:
            report(f"train {cid}: old stops, new resumes", cross[0] == old)
        if "error" in old:
            continue
        name = cid.replace("+", "_")
        shutil.copy(os.path.join(WORK, "train", "old", name, name + ".safetensors"),
                    os.path.join(fresh, name + ".safetensors"))
        argv = dict(TRAININGS)[cid]
        task = task_of(argv)
        word = "good" if task == "classify" else "cat"
        for qid, qargv, qout in fixture_cases.model_cases(name, task, layers_of(argv), word):
            if qid.split("/")[1] in FRESH_QUERIES:
                fresh_cases.append((f"fresh/{qid}", qargv, qout, None, fresh))
    items = [(cid, argv, out, isa, None) for isa in (None, "avx2")
             for cid, argv, out in fixture_cases.all_cases()] + fresh_cases
    with ThreadPoolExecutor(2) as pool:
        for cid, isa, (old, new) in pool.map(run_both, items):
            if old != new:
                for key in ("code", "stdout", "stderr", "file"):
                    if old.get(key) != new.get(key):
                        print(f"  {cid} ({isa}) {key}: old {str(old.get(key))[:200]!r}\n"
                              f"  {' ' * len(cid)}        new {str(new.get(key))[:200]!r}")
                        break
            report(f"{isa} {cid}", old == new)
finally:
    shutil.rmtree(WORK, ignore_errors=True)

different = [w for w, same in results if not same]
print(f"\n{len(results) - len(different)} identical, {len(different)} different "
      f"(old {OLD}, new {NEW})")
sys.exit(1 if different else 0)
EOF
