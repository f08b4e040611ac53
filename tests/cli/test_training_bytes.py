"""Training must write the same model bytes as before the #53 refactor: every small run of
tests/data/fixtures/training_cases.py (classify, next-word, masked-word and lm; with and without
--shards 2; bf16 products; --stop-after-steps then --resume), trained with ATTN_BIN, against the
sha256 that f70fdea's binary gave (expected/training_<isa>.json, by record_training.py).

The instruction sets compared are fixture_cases.isas_to_compare()'s (ATTN_FIXTURE_ISAS chooses)."""
import json
import os
import sys

import pytest

from conftest import ATTN

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "data", "fixtures")
sys.path.insert(0, FIXTURES)
import fixture_cases  # noqa: E402
import training_cases  # noqa: E402

isas_to_compare = fixture_cases.isas_to_compare


def expected_for(isa):
    path = os.path.join(FIXTURES, "expected", f"training_{isa}.json")
    assert os.path.exists(path), f"{path} is missing: tests/data/fixtures/make_fixtures.sh writes it"
    with open(path, encoding="utf-8") as f:
        recorded = json.load(f)
    assert recorded["argv"] == dict(training_cases.TRAININGS), \
        "training_cases.py and the recorded runs disagree: rerun make_fixtures.sh with f70fdea's binary"
    return recorded["sha256"]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    if not os.path.exists(ATTN):
        pytest.fail(f"attn binary not found at {ATTN} (build first, or set ATTN_BIN)")
    place = str(tmp_path_factory.mktemp("training"))
    fixture_cases.scratch(place)
    return place


@pytest.mark.parametrize("isa", isas_to_compare())
@pytest.mark.parametrize("case_id,argv", training_cases.TRAININGS, ids=[c for c, _ in training_cases.TRAININGS])
def test_model_bytes_unchanged(case_id, argv, isa, folder):
    want = expected_for(isa)[case_id]
    got = training_cases.train(ATTN, case_id, argv, isa, folder)
    if got != want and not fixture_cases.EXACT:
        pytest.skip(f"not a Release build (ATTN_README_EXACT=0): {case_id} wrote other bytes")
    assert got == want, (f"attn train {' '.join(argv)} --threads 2 (ATTN_ISA={isa}) wrote another model "
                         f"file than f70fdea's: sha256 {got}, expected {want}")


def test_resumed_runs_write_the_uninterrupted_file():
    """The recorded sums say so too: a run stopped and resumed is the run never stopped."""
    for isa in isas_to_compare():
        want = expected_for(isa)
        for case_id, _ in training_cases.TRAININGS:
            if case_id.endswith("+resume"):
                assert want[case_id] == want[case_id[:-len("+resume")]], (isa, case_id)



RESUMED = [(c, a) for c, a in training_cases.TRAININGS if c.endswith("+resume")]


@pytest.mark.parametrize("isa", isas_to_compare())
@pytest.mark.parametrize("case_id,argv", RESUMED, ids=[c for c, _ in RESUMED])
def test_checkpoint_written_before_resumes_to_the_same_file(case_id, argv, isa, folder):
    """A checkpoint f70fdea wrote (tests/data/fixtures/checkpoints/) stays readable, and resuming
    it writes what f70fdea's resume wrote."""
    path = os.path.join(FIXTURES, "expected", f"training_{isa}.json")
    with open(path, encoding="utf-8") as f:
        want = json.load(f)["resumed_from_checkpoints"][case_id]
    got = training_cases.resume_committed(ATTN, case_id, argv, isa, folder)
    if got != want and not fixture_cases.EXACT:
        pytest.skip(f"not a Release build (ATTN_README_EXACT=0): {case_id} resumed to other bytes")
    assert got == want, (f"attn train {' '.join(argv)} --resume from f70fdea's checkpoint (ATTN_ISA={isa}): "
                         f"sha256 {got}, expected {want}")
