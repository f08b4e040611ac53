"""bench/wic on a tiny WiC-format data set made here: the protocol (threshold tuned on train,
applied to the measured split) and its baselines, and one clear error on malformed data."""
import os
import subprocess
import sys

import attn
import pytest

REPO = os.path.join(os.path.dirname(__file__), "..", "..")
BENCH = os.path.join(REPO, "bench", "wic")
ATTN_BIN = os.environ.get("ATTN_BIN") or os.path.join(REPO, "build", "bin", "attn")

CONTEXTS = [
    "we walked along the bank of the river",
    "she opened an account at the bank downtown",
    "the bank raised its interest rates today",
    "fish swam near the muddy bank",
    "he sat on the grassy bank and watched boats",
    "the bank approved the loan quickly",
]


def write_split(folder, name, pairs):
    with open(os.path.join(folder, f"{name}.data.txt"), "w") as data, \
         open(os.path.join(folder, f"{name}.gold.txt"), "w") as gold:
        for s1, s2, same in pairs:
            data.write(f"bank\tN\t{s1.split().index('bank')}-{s2.split().index('bank')}\t{s1}\t{s2}\n")
            gold.write("T\n" if same else "F\n")


def pairs():
    # Same meaning: one sentence twice (every contextual vector agrees with itself); different:
    # two different sentences. Balanced, so a source that cannot tell scores exactly 50%.
    out = []
    for i, s in enumerate(CONTEXTS):
        out.append((s, s, True))
        out.append((s, CONTEXTS[(i + 1) % len(CONTEXTS)], False))
    return out


def run(*args):
    return subprocess.run([sys.executable, BENCH, "--attn", ATTN_BIN,
                           "--vectors-from", os.path.dirname(attn.__file__), *args],
                          capture_output=True, text=True, timeout=300)


@pytest.mark.skipif(not os.path.exists(ATTN_BIN), reason="no attn binary (ATTN_BIN)")
def test_wic_protocol_on_pairs_made_here(tmp_path):
    write_split(tmp_path, "train", pairs())
    write_split(tmp_path, "dev", pairs()[::-1])
    r = run("--data", str(tmp_path), "--source", "flat=--scale 0.001")
    assert r.returncode == 0, r.stderr
    rows = {line.split("|")[1].strip(): line for line in r.stdout.splitlines() if line.startswith("| ")}
    # The target's static vector is the same in every sentence: chance, exactly.
    assert "| 50.0% |" in rows["static vectors"]
    # Attention over different contexts moves "bank"; over the same sentence it does not.
    assert "| 100.0% |" in rows["attn embed"]
    assert "| 100.0% |" in rows["flat"]
    assert "| 100.0% |" in rows["average of context"]


@pytest.mark.skipif(not os.path.exists(ATTN_BIN), reason="no attn binary (ATTN_BIN)")
def test_wic_malformed_line_is_one_clear_error(tmp_path):
    write_split(tmp_path, "train", pairs())
    write_split(tmp_path, "dev", pairs())
    with open(tmp_path / "dev.data.txt", "a") as f:
        f.write("bank\tN\tonly three fields\n")
    r = run("--data", str(tmp_path))
    assert r.returncode != 0
    assert r.stderr.strip().startswith("error: ")
    assert "dev.data.txt" in r.stderr and "line 13" in r.stderr
