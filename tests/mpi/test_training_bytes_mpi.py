"""mpirun -n 2 attn-mpi train writes the bytes that f70fdea's attn train --shards 2 wrote
(tests/data/fixtures/expected/training_<isa>.json, the *_shards2 runs of training_cases.py) for
classify, next-word, masked-word and lm: the #53 refactor keeps the distributed step's file too."""
import json
import os
import sys

import pytest

from test_ring_attention import ATTN_MPI, MPI_ENV, MPIRUN, pytestmark  # noqa: F401 (the skip)

HERE = os.path.dirname(__file__)
FIXTURES = os.path.join(HERE, "..", "data", "fixtures")
sys.path.insert(0, FIXTURES)
import fixture_cases  # noqa: E402
import training_cases  # noqa: E402

SHARDED = [(c, a) for c, a in training_cases.TRAININGS if c.endswith("_shards2")]


def without_shards(argv):
    i = argv.index("--shards")
    return argv[:i] + argv[i + 2:]


@pytest.mark.parametrize("case_id,argv", SHARDED, ids=[c for c, _ in SHARDED])
def test_two_ranks_write_the_recorded_shards2_file(case_id, argv, tmp_path):
    # The portable instruction set where the CPU has it (tests/cli/test_training_bytes.py's first).
    isa = fixture_cases.isas_to_compare()[0]
    with open(os.path.join(FIXTURES, "expected", f"training_{isa}.json"), encoding="utf-8") as f:
        want = json.load(f)["sha256"][case_id]
    fixture_cases.scratch(str(tmp_path))
    launcher = [MPIRUN, "--oversubscribe", "--quiet", "-n", "2", os.path.abspath(ATTN_MPI)]
    mpi_settings = {k: v for k, v in MPI_ENV.items() if k.startswith("OMPI_")}
    got = training_cases.train(launcher, case_id, without_shards(argv), isa, str(tmp_path), env_extra=mpi_settings)
    if got != want and not fixture_cases.EXACT:
        pytest.skip(f"not a Release build (ATTN_README_EXACT=0): {case_id} wrote other bytes")
    assert got == want, f"mpirun -n 2 attn-mpi train {' '.join(without_shards(argv))} (ATTN_ISA={isa}): " \
                        f"sha256 {got}, f70fdea's attn train --shards 2 wrote {want}"
