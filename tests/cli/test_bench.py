"""attn bench: the JSON contract shared with the peers (keys, FLOP convention), --mha, and
usage errors. Timings themselves are never asserted: speed is measured by bench/compare."""
import json

import pytest

KEYS = ["B", "N", "H", "D", "causal", "backward", "threads", "median_s", "gflops"]


def lines(out):
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


@pytest.mark.parametrize("causal", [False, True])
def test_json_keys_and_flop_convention(attn, causal):
    args = ["bench", "--json", "--reps", "2", "--threads", "1", "2,33,3,16"]
    r = attn(*(args + (["--causal"] if causal else [])))
    assert r.code == 0, r.err
    (j,) = lines(r.out)
    for key in KEYS:
        assert key in j, key
    assert (j["B"], j["N"], j["H"], j["D"], j["causal"], j["threads"]) == (2, 33, 3, 16, causal, 1)
    flops = 4 * 2 * 3 * 33 * 33 * 16 * (0.5 if causal else 1.0)
    assert j["median_s"] > 0
    assert j["gflops"] == pytest.approx(flops / j["median_s"] / 1e9, rel=1e-9)


def test_one_line_per_shape_and_reference_kernel(attn):
    r = attn("bench", "--json", "--reps", "1", "--kernel", "reference", "1,7,1,8", "1,9,2,8")
    assert r.code == 0, r.err
    got = lines(r.out)
    assert [(j["N"], j["H"], j["kernel"]) for j in got] == [(7, 1, "reference"), (9, 2, "reference")]


def test_mha_counts_the_projections(attn):
    r = attn("bench", "--json", "--mha", "--reps", "2", "2,17,3,8")
    assert r.code == 0, r.err
    (j,) = lines(r.out)
    E = 3 * 8
    flops = 8 * 2 * 17 * E * E + 4 * 2 * 3 * 17 * 17 * 8
    assert j["mha"] is True
    assert j["gflops"] == pytest.approx(flops / j["median_s"] / 1e9, rel=1e-9)


@pytest.mark.parametrize("args", [["0,1,1,1"], ["1,2,3"], ["a,b,c,d"], ["--reps", "0", "1,2,1,8"],
                                  ["--kernel", "fast", "1,2,1,8"], []])
def test_usage_errors(attn, args):
    r = attn("bench", *args)
    assert r.code == 1
    assert r.err.startswith("error: ")
    assert r.out == ""
