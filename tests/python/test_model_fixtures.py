"""The Python module on model files written before the #53 refactor (tests/data/fixtures/models,
by f70fdea): attn.TextModel.load, then embed, inspect, predict, evaluate and generate give exactly
what f70fdea's module gave (expected/python_<isa>.json; floats compared as their exact hex,
arrays as the sha256 of their float32 bytes). Each instruction set runs in a process of its own,
since the kernels are chosen once per process (ATTN_ISA); the sets are those the CLI's fixture
test compares (ATTN_FIXTURE_ISAS chooses)."""
import json
import os
import subprocess
import sys

import pytest

attn = pytest.importorskip("attn")

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "data", "fixtures")
sys.path.insert(0, FIXTURES)
import fixture_cases  # noqa: E402


isas_to_compare = fixture_cases.isas_to_compare


@pytest.mark.parametrize("isa", isas_to_compare())
def test_module_answers_unchanged(isa):
    path = os.path.join(FIXTURES, "expected", f"python_{isa}.json")
    assert os.path.exists(path), f"{path} is missing: tests/data/fixtures/make_fixtures.sh writes it"
    with open(path, encoding="utf-8") as f:
        want = json.load(f)
    env = dict(os.environ, ATTN_ISA=isa, PYTHONWARNINGS="ignore",
               PYTHONPATH=os.pathsep.join([os.path.dirname(os.path.dirname(os.path.abspath(attn.__file__))),
                                           os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, os.path.join(FIXTURES, "record_python.py")], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    got = json.loads(proc.stdout)
    assert set(got) == set(want)
    bad = [f"{model}.{key}: expected {want[model].get(key)!r:.300}\n got {got[model].get(key)!r:.300}"
           for model in sorted(want) for key in sorted(set(want[model]) | set(got[model]))
           if want[model].get(key) != got[model].get(key)]
    if bad and not fixture_cases.EXACT:
        pytest.skip(f"not a Release build (ATTN_README_EXACT=0): {len(bad)} answers differ")
    assert not bad, f"ATTN_ISA={isa}: {len(bad)} answers changed:\n" + "\n".join(bad)
