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


def test_per_instruction_set_objects_emit_no_shared_function_with_vector_code():
    """A library function that a per-instruction-set file (compiled -mavx512f …) emits out of line,
    such as std::vector::resize, is one weak symbol for the whole library, and the linker may keep
    that file's copy for every caller: the sanitized build's bf16 tests died of SIGILL on an AVX2
    CPU so. Such functions (outside namespace attn, whose kernel templates are per instruction set
    by their tags) must hold no vector instruction; the kernels resize through
    kernels/scratch_vectors.cpp instead."""
    import shutil
    import subprocess
    from conftest import ATTN
    objects = sorted((Path(ATTN).resolve().parents[1] / "CMakeFiles" / "attn.dir" / "src" / "kernels").glob(
        "*_avx*.cpp.o")) + sorted((Path(ATTN).resolve().parents[1] / "CMakeFiles" / "attn.dir" / "src" /
                                    "kernels").glob("*_amx.cpp.o"))
    assert len(objects) >= 8, f"the per-instruction-set objects were not found beside {ATTN}"
    assert shutil.which("nm") and shutil.which("objdump")
    bad = []
    for obj in objects:
        symbols = subprocess.run(["nm", "--defined-only", str(obj)], capture_output=True, text=True, check=True)
        weak = [line.split()[2] for line in symbols.stdout.splitlines()
                if len(line.split()) == 3 and line.split()[1] == "W" and not re.match(r"_ZNK?4attn|DW\.ref", line.split()[2])]
        for sym in weak:
            code = subprocess.run(["objdump", "-d", "--no-show-raw-insn", f"--disassemble={sym}", str(obj)],
                                  capture_output=True, text=True, check=True).stdout
            if re.search(r"%[xyz]mm\d|%k[0-7]\b", code):
                bad.append(f"{obj.name}: {sym}")
    assert not bad, f"weak functions compiled for an instruction set, shared by the whole library: {bad}"
