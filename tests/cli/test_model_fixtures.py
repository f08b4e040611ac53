"""Model files written by attn before the #53 refactor (f70fdea) must load and answer exactly as
they did: every inference command of tests/data/fixtures/fixture_cases.py, run with ATTN_BIN on
the committed models, against the outputs that f70fdea recorded, byte for byte (exit code, stdout,
stderr and any file written). tests/data/fixtures/README.md says how they were made.

Outputs depend on the instruction set the kernels dispatch to, and on nothing else that the cases
leave free (record.py checked the thread count). The portable set, AVX2, is compared on any CPU
that has it, and AVX-512 too where the CPU has that; a CPU without AVX2 compares the reference
kernels; ATTN_FIXTURE_ISAS=reference,avx2,avx512 chooses (fixture_cases.isas_to_compare)."""
import json
import os
import shutil
import struct
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from conftest import ATTN

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "data", "fixtures")
sys.path.insert(0, FIXTURES)
import fixture_cases  # noqa: E402


isas_to_compare = fixture_cases.isas_to_compare


def expected_for(isa):
    path = os.path.join(FIXTURES, "expected", f"{isa}.json")
    assert os.path.exists(path), f"{path} is missing: tests/data/fixtures/make_fixtures.sh writes it"
    with open(path, encoding="utf-8") as f:
        return json.load(f)


GROUPS = sorted({cid.split("/")[0] for cid, _, _ in fixture_cases.all_cases()})


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    if not os.path.exists(ATTN):
        pytest.fail(f"attn binary not found at {ATTN} (build first, or set ATTN_BIN)")
    folder = str(tmp_path_factory.mktemp("fixtures"))
    fixture_cases.scratch(folder)
    return folder


def run_group(group, isa, folder, models_dir=None, only=None):
    """Runs one model's cases (two at a time, each in its own folder); returns {case id: result}."""
    cases = [c for c in fixture_cases.all_cases() if c[0].split("/")[0] == group
             and (only is None or c[0].split("/")[1] in only)]

    def one(case):
        cid, argv, out = case
        place = os.path.join(folder, cid.replace("/", "__"))
        os.makedirs(place, exist_ok=True)
        fixture_cases.scratch(place)
        if models_dir:
            os.remove(os.path.join(place, "models"))
            os.symlink(models_dir, os.path.join(place, "models"))
        return cid, fixture_cases.run_case(ATTN, argv, out, isa, place)

    with ThreadPoolExecutor(2) as pool:
        return dict(pool.map(one, cases))


def first_difference(want, got):
    for key in ("code", "stdout", "stderr", "file"):
        if want.get(key) != got.get(key):
            return f"{key}: expected {str(want.get(key))[:300]!r}\n got {str(got.get(key))[:300]!r}"
    return None


@pytest.mark.parametrize("isa", isas_to_compare())
@pytest.mark.parametrize("group", GROUPS)
def test_fixture_outputs_unchanged(group, isa, scratch):
    expected = expected_for(isa)
    got = run_group(group, isa, os.path.join(scratch, isa))
    wanted = {cid: e for cid, e in expected.items() if cid.split("/")[0] == group}
    argvs = {cid: argv for cid, argv, _ in fixture_cases.all_cases()}
    assert set(got) == set(wanted) and all(wanted[c]["argv"] == argvs[c] for c in got), \
        "fixture_cases.py and expected/<isa>.json disagree: rerun make_fixtures.sh with f70fdea's binary"
    bad = []
    for cid in sorted(got):
        want = {k: v for k, v in wanted[cid].items() if k != "argv"}
        diff = first_difference(want, got[cid])
        if diff:
            bad.append(f"{cid} (attn {' '.join(wanted[cid]['argv'])}), ATTN_ISA={isa}:\n  {diff}")
    if bad and not fixture_cases.EXACT and all(r["code"] == wanted[c]["code"] for c, r in got.items()):
        pytest.skip(f"not a Release build (ATTN_README_EXACT=0): {len(bad)} outputs differ")
    assert not bad, f"{len(bad)} of {len(got)} outputs changed:\n" + "\n".join(bad)


def bump_one_ulp(src, dst, tensor):
    """Copies a model file with the largest float of `tensor` (in magnitude) one ulp further from
    zero: of all its elements the one whose ulp weighs most in the sums it enters."""
    data = bytearray(open(src, "rb").read())
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    assert tensor in header, f"{src} has no tensor {tensor}"
    begin, end = header[tensor]["data_offsets"]
    values = np.frombuffer(bytes(data[8 + n + begin:8 + n + end]), dtype="<f4")
    i = int(np.argmax(np.abs(values)))
    at = 8 + n + begin + 4 * i
    away = np.float32(np.inf) if values[i] >= 0 else np.float32(-np.inf)
    data[at:at + 4] = np.nextafter(values[i], away, dtype=np.float32).astype("<f4").tobytes()
    open(dst, "wb").write(bytes(data))


# One weight of each of several kinds: attention projections, the word window, the pooling query,
# new-word rows, the head, norms, feed-forward layers. Not every weight can be seen: a one-ulp
# change smaller than half an ulp of every sum it enters leaves every value computed from it the
# same, so no output could show it (here, for instance, the largest of lm_l2_adaptive's output
# biases or cluster weights, or of its embeddings); each case below reaches some output.
ULP_CASES = [
    ("cls_l2_prenorm_attention_positions", "layers.0.attention.q_proj_weight"),
    ("cls_l2_prenorm_attention_positions", "window.weight"),
    ("cls_l2_prenorm_attention_positions", "pool.query"),
    ("cls_l1_meanmax_frozen", "embedding.new_words"),
    ("cls_l0_glove", "head.2.bias"),
    ("nw_l2_max_positions_newwords", "layers.0.norm2.weight"),
    ("mw_l1_glove_frozen", "embedding.new_words"),
    ("mw_l2_prenorm_adaptive", "layers.1.linear1.weight"),
    ("mw_l2_prenorm_adaptive", "final_norm.weight"),
    ("lm_l2_adaptive", "layers.1.attention.k_proj_weight"),
    ("lm_l1_full", "layers.0.linear2.bias"),
]


# The queries that print full float precision (eval's loss, embed's values) or sample (generate).
ULP_QUERIES = {"eval", "eval_train", "eval_every5", "predict_batch", "embed_npy", "embed_batch_json",
               "generate_ignore_eos", "generate_topp_temp"}


@pytest.mark.parametrize("group,tensor", ULP_CASES)
def test_one_ulp_in_one_weight_is_seen(group, tensor, scratch, tmp_path):
    """The comparison is fine enough: one weight moved by one ulp changes some recorded output."""
    isa = isas_to_compare()[0]
    models = tmp_path / "models"
    shutil.copytree(fixture_cases.MODELS, models)
    name = f"{group}.safetensors"
    bump_one_ulp(os.path.join(fixture_cases.MODELS, name), models / name, tensor)
    expected = expected_for(isa)
    got = run_group(group, isa, str(tmp_path / "run"), str(models), ULP_QUERIES)
    changed = [cid for cid in got if first_difference(
        {k: v for k, v in expected[cid].items() if k != "argv"}, got[cid])]
    assert changed, f"{group}: {tensor} moved one ulp, yet every output is the recorded one"
