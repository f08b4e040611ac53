"""Rules about attn's source that the compiler does not check."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_functions_compiled_per_instruction_set_follow_attn_isa():
    """GCC's target_clones picks a function's compilation by asking the CPU, ignoring ATTN_ISA: a
    sum over vector lanes then runs 16 lanes wide under ATTN_ISA=avx2 on an AVX-512 CPU and 8 wide
    on an AVX2 CPU, and the AVX2 fixtures (tests/data/fixtures) hold on one machine only.
    src/kernels/isa_clones.hpp's ATTN_ISA_CLONES follows ATTN_ISA instead."""
    sources = [p for folder in ("src", "include", "cli", "python") for p in (ROOT / folder).rglob("*")
               if p.suffix in (".cpp", ".hpp", ".h", ".cc", ".cu", ".cuh")]
    assert len(sources) > 50, f"found only {len(sources)} source files under {ROOT}"
    uses = [f"{p.relative_to(ROOT)}:{n}" for p in sources
            for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
            if re.search(r"target_clones\s*\(", line)]
    assert not uses, f"target_clones (use ATTN_ISA_CLONES from src/kernels/isa_clones.hpp): {uses}"
    assert any("ATTN_ISA_CLONES(" in p.read_text(encoding="utf-8") for p in sources if p.suffix == ".cpp")
