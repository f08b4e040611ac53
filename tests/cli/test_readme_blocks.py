"""Every fenced block of README.md and of the guides it moved to docs/ (DOCUMENTS, in the order the
one long README had them), either checked by running it or listed with the reason it cannot run
here.

Blocks with `$ ` lines are terminal sessions. Each command runs with bash (pipefail on) in one
temporary folder shared by all the documents, in DOCUMENTS order, with `attn` meaning the binary
under test; stdout and stderr together must equal the lines under the command once both went
through NORMALISE below (the only output that may differ from the README), and the command must
exit 0. The folder starts with what the README says it holds: the negation data written by
tests/data/make_negation.py and tests/data/seed003_toy.txt.

Every other block is named in OTHER_BLOCKS by the start of its first line, with the check that
runs it, or in NOT_RUN with the reason it cannot run. A block that is neither fails
test_every_block_is_checked_or_listed, so a new block cannot go unchecked.

The README's figures come from the AVX-512 path on the development machine; on a CPU with another
kernel (AVX2) training rounds differently, so there a session whose output differs is skipped,
naming its commands, once every command exited 0 (as for a build that is not Release, below).
"""
import os
import re
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from conftest import ATTN, write_safetensors

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
# The README and the guides that hold its former sections, in that order: later sessions read
# what earlier ones wrote (negation.safetensors, toy.safetensors).
DOCUMENTS = [README] + [ROOT / "docs" / name for name in
                        ("CLI.md", "TRAINING.md", "PICTURES.md", "VECTORS.md", "LIBRARY.md", "PERFORMANCE.md",
                         "LAYOUT.md")]
DATA = ROOT / "tests" / "data"
BUILD = Path(ATTN).resolve().parents[1]  # build/bin/attn → build/

# What may differ between a run and the README, one rule per kind of field. Each rule must match
# somewhere in the README's sessions (test_every_rule_is_used), so none lingers unnoticed.
NORMALISE = [
    ("training speed", re.compile(r"\b\d+ tokens/s\b"), "<N> tokens/s"),
    ("epoch time, seconds", re.compile(r"(?<=tokens/s  )\d+\.\d s$", re.M), "<T> s"),
]
# A command's output is compared without its trailing blank lines: in `make demo`'s block those
# separate the commands (the Makefile echoes them), they are not attn's output.

# The README shows what `make build` (Release) prints. A build with other flags (the sanitizers'
# RelWithDebInfo) rounds some sums differently and so trains another model (the negation run
# keeps another epoch): tests/CMakeLists.txt sets ATTN_README_EXACT=0 for such builds, and there
# a session whose output differs is skipped, naming its commands, once every command exited 0
# (what such a build checks). Unset, as when pytest is run by hand, outputs must match.
# The same on a CPU whose kernels are not the AVX-512 ones the README's figures come from: the
# AVX2 kernels add a row's sums 8 lanes at a time, not 16, and the negation run keeps another
# epoch (tests/data/fixtures holds each instruction set's exact outputs, on every CPU).
sys.path.insert(0, str(ROOT / "tests" / "data" / "fixtures"))
from fixture_cases import selected_isa as kernels_here  # noqa: E402

README_KERNELS = "avx512"
EXACT = os.environ.get("ATTN_README_EXACT", "1") == "1" and kernels_here() == README_KERNELS

# Blocks that cannot run here (keyed by the start of their first line), and why.
NOT_RUN = {
    "make demo    #": "builds the project (and `make test` runs every test, this one included); "
                     "the demo's own commands are the session block after it, checked, and "
                     "test_make_demo_runs_that_block checks the Makefile runs those",
    "epoch 2/3 [": "a terminal's progress bar at one moment of a run (needs a terminal; the bar is "
                   "tested by tests/cli/test_train.py::test_progress_bar_on_a_terminal)",
    "include/attn/": "the source tree's layout, not a command",
    "rooms, top to bottom:": "docs/LAYOUT.md's picture of who calls whom, not a command",
    "% attn train --task lm --data little_men": "a real run on a Gutenberg book from the shared corpus "
                                                "(not in the repo; `%` marks its commands); the same "
                                                "commands on the repo's own text are tested by "
                                                "tests/cli/test_language_model.py",
    "% attn train --task translate --source multi30k": "a real run on the shared Multi30k data (not in the "
                                                          "repo; `%` marks its commands); the same commands on "
                                                          "tests/data/toy_pairs.tsv are tested by "
                                                          "tests/cli/test_translate.py",
    "import json, struct": "needs PyTorch; run as it stands by tests/python/test_readme_snippet.py "
                           "(test_the_pytorch_snippet_is_the_one_the_python_tests_run checks its "
                           "marker)",
    "cmake -S . -B build-shared": "a second full build and an install (minutes); "
                                  "tests/package/test_install.sh does both in `make test`",
    "build/bin/attn train --task classify --data $TMP/train.tsv": "the SST-2 benchmark's commands, as "
                                                                  "bench/text_classify ran them on the shared "
                                                                  "corpus (not in the repo)",
    "/usr/bin/python3 -m venv --system-site-packages env": "a full build of the package (minutes); "
                                                           "tests/package/test_wheel.sh builds the wheel over "
                                                           "make's tree, installs it in a fresh venv and uses it",
}


@dataclass
class Block:
    file: str                      # relative to the repository
    line: int                      # 1-based line of the opening fence
    lang: str
    lines: list = field(default_factory=list)

    @property
    def where(self):
        return f"{self.file}:{self.line}"

    @property
    def first(self):
        return self.lines[0] if self.lines else ""

    @property
    def is_session(self):
        return any(l.startswith("$ ") for l in self.lines)


def readme_blocks():
    blocks = []
    for document in DOCUMENTS:
        name = str(document.relative_to(ROOT))
        lines = document.read_text(encoding="utf-8").split("\n")
        i = 0
        while i < len(lines):
            fence = re.match(r"```(\w*)\s*$", lines[i])
            if not fence:
                i += 1
                continue
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            assert j < len(lines), f"{name}:{i + 1}: a fence that is never closed"
            blocks.append(Block(name, i + 1, fence.group(1), lines[i + 1:j]))
            i = j + 1
    return blocks


def session_steps(block):
    """[(command, expected output lines)] of a session block."""
    assert block.lines[0].startswith("$ "), f"{block.where}: output before any command"
    steps = []
    for line in block.lines:
        if line.startswith("$ "):
            steps.append((line[2:], []))
        else:
            steps[-1][1].append(line)
    return steps


def normalise(text):
    for _, pattern, replacement in NORMALISE:
        text = pattern.sub(replacement, text)
    return text.rstrip("\n")


SESSIONS = [b for b in readme_blocks() if b.is_session]


def run_shell(command, folder, bindir, timeout=300):
    env = dict(os.environ, PATH=f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}")
    return subprocess.run(["bash", "-o", "pipefail", "-c", command], cwd=folder, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=timeout)


def write_mha_inputs(folder):
    """mha.safetensors (nn.MultiheadAttention(64, 8)'s state dict, random, biases non-zero) and
    x.npy [2, 5, 64]: the files the README's mha lines read."""
    rng = np.random.default_rng(27)
    weights = {"in_proj_weight": rng.standard_normal((192, 64)) * 0.125,
               "in_proj_bias": rng.standard_normal(192) * 0.1,
               "out_proj.weight": rng.standard_normal((64, 64)) * 0.125,
               "out_proj.bias": rng.standard_normal(64) * 0.1}
    write_safetensors(folder / "mha.safetensors", weights)
    np.save(folder / "x.npy", rng.standard_normal((2, 5, 64)).astype(np.float32))
    return {k: v.astype(np.float32).astype(np.float64) for k, v in weights.items()}


@pytest.fixture(scope="module")
def readme(tmp_path_factory):
    """The folder the README's commands run in, after every session block ran there in order
    (later blocks read what earlier ones wrote: negation.safetensors, toy.safetensors), and each
    command's result."""
    if not os.path.exists(ATTN):
        pytest.fail(f"attn binary not found at {ATTN} (build first, or set ATTN_BIN)")
    folder = tmp_path_factory.mktemp("readme")
    bindir = tmp_path_factory.mktemp("bin")
    (bindir / "attn").symlink_to(os.path.abspath(ATTN))
    subprocess.run([sys.executable, DATA / "make_negation.py", folder], check=True)
    shutil.copy(DATA / "seed003_toy.txt", folder)
    # A GloVe text file by the name the Python block loads (the real one is 1 GB): three words.
    rng = np.random.default_rng(3)
    (folder / "glove.6B.300d.txt").write_text("".join(
        w + " " + " ".join(f"{v:.5f}" for v in rng.standard_normal(300)) + "\n"
        for w in ("the", "river", "bank")))
    mha_weights = write_mha_inputs(folder)
    results = {}
    for block in SESSIONS:
        for command, _ in session_steps(block):
            results[(block.where, command)] = run_shell(command, folder, bindir)
    return {"folder": folder, "bindir": bindir, "results": results, "mha": mha_weights}


@pytest.mark.parametrize("block", SESSIONS, ids=[b.where for b in SESSIONS])
def test_session_block_output_is_what_the_commands_print(readme, block):
    differ = []
    for command, expected in session_steps(block):
        r = readme["results"][(block.where, command)]
        assert r.returncode == 0, f"$ {command}\n{r.stdout}"
        if EXACT:
            assert normalise(r.stdout) == normalise("\n".join(expected)), f"$ {command}"
        elif normalise(r.stdout) != normalise("\n".join(expected)):
            differ.append(command)
    if differ:
        why = ("not a Release build (ATTN_README_EXACT=0)" if kernels_here() == README_KERNELS else
               f"the {kernels_here()} kernels, not the {README_KERNELS} ones the figures come from")
        pytest.skip(f"{why}, and these print other figures: {differ}")


def test_every_rule_is_used():
    sessions = "\n".join("\n".join(b.lines) for b in SESSIONS)
    for name, pattern, _ in NORMALISE:
        assert pattern.search(sessions), f"normalisation rule {name!r} matches nothing in README.md"


def test_normalising_keeps_what_the_readme_states():
    # The rules replace the measured figures only, not the losses and accuracies beside them.
    line = "epoch 9/34  loss 0.0007  valid accuracy 0.9900 (n 300)  135651 tokens/s  0.1 s"
    assert normalise(line) == "epoch 9/34  loss 0.0007  valid accuracy 0.9900 (n 300)  <N> tokens/s  <T> s"
    assert normalise(line) != normalise(line.replace("0.0007", "0.0008"))


def test_make_demo_runs_that_block():
    # `make demo` echoes each command before running it; those must be one session block's.
    recipe = re.search(r"^demo:.*?\n((?:\t.*\n)+)", (ROOT / "Makefile").read_text(), re.M).group(1)
    echoed = [c.replace("$$", "$") for c in re.findall(r"@echo '(\$\$ [^']*)'", recipe)]
    ran = [c.replace("$(ATTN)", "attn") for c in re.findall(r"^\t@(\$\(ATTN\) .*)$", recipe, re.M)]
    assert echoed and [c[2:] for c in echoed] == ran
    assert any([l for l in b.lines if l.startswith("$ ")] == echoed for b in SESSIONS)


def test_the_pytorch_snippet_is_the_one_the_python_tests_run():
    marker = "<!-- tests/python/test_readme_snippet.py runs the next block as it stands -->"
    block = next(b for b in readme_blocks() if b.first.startswith("import json, struct"))
    lines = (ROOT / block.file).read_text(encoding="utf-8").split("\n")
    assert lines[block.line - 2] == marker


# ---- the blocks that are not sessions -------------------------------------------------------

def numpy_mha(w, x):
    """nn.MultiheadAttention(64, 8, batch_first=True)(x, x, x)[0] in float64."""
    b, l, e = x.shape
    heads, d = 8, e // 8
    q, k, v = np.split(x.astype(np.float64) @ w["in_proj_weight"].T + w["in_proj_bias"], 3, -1)
    split = lambda t: t.reshape(b, l, heads, d).transpose(0, 2, 1, 3)
    s = split(q) @ split(k).transpose(0, 1, 3, 2) / np.sqrt(d)
    a = np.exp(s - s.max(-1, keepdims=True))
    a /= a.sum(-1, keepdims=True)
    o = (a @ split(v)).transpose(0, 2, 1, 3).reshape(b, l, e)
    return o @ w["out_proj.weight"].T + w["out_proj.bias"]


def assert_is_mha_of_x(readme, path):
    got = np.load(path)
    want = numpy_mha(readme["mha"], np.load(readme["folder"] / "x.npy"))
    assert got.shape == want.shape
    assert np.abs(got - want).max() <= 1e-5 * np.abs(want).max()


def run_command_lines(readme, block):
    """Each line of a block of bare commands, as a user would paste them: exit 0, and every
    `-o FILE` written."""
    for command in (l for l in block.lines if l.strip()):
        r = run_shell(command, readme["folder"], readme["bindir"])
        assert r.returncode == 0, f"{command}\n{r.stdout}"
        for out in re.findall(r"-o (\S+)", command):
            assert (readme["folder"] / out).stat().st_size > 0, command


def check_heatmap_commands(readme, block):
    run_command_lines(readme, block)


def check_cli_mha(readme, block):
    run_command_lines(readme, block)
    assert_is_mha_of_x(readme, readme["folder"] / "y.npy")


def python_module_dir():
    """Where the built module is: ATTN_PYTHONPATH (set by tests/CMakeLists.txt when it is built),
    else build/python beside the binary; skips only when it was not given and is not there."""
    given = os.environ.get("ATTN_PYTHONPATH")
    folder = given or str(BUILD / "python")
    probe = subprocess.run([sys.executable, "-c", "import attn"], capture_output=True, text=True,
                           env=dict(os.environ, PYTHONPATH=folder))
    if probe.returncode != 0:
        if given:
            pytest.fail(f"ATTN_PYTHONPATH={given} but `import attn` fails: {probe.stderr}")
        pytest.skip(f"the Python module is not built ({folder})")
    return folder


def run_python(readme, prelude, block, epilogue):
    source = "\n".join([textwrap.dedent(prelude), *block.lines, textwrap.dedent(epilogue)])
    r = subprocess.run([sys.executable, "-c", source], cwd=readme["folder"], capture_output=True,
                       text=True, env=dict(os.environ, PYTHONPATH=python_module_dir()),
                       timeout=300)
    assert r.returncode == 0, r.stderr
    return r.stdout


def check_python_library(readme, block):
    # The block leaves x to the reader: here the [B, L, E] input mha.safetensors takes (E = 64).
    run_python(readme, """
        import numpy as np
        x = np.load("x.npy")
        """, block, """
        assert out.dtype == np.float32 and out.shape == (2, 8, 128, 64)
        assert y.shape == x.shape and w.shape == (2, 5, 5)
        assert embeddings.shape == (6, 100) and attention.shape == (6, 6) and glove.dim == 300
        assert tokens == "the movie was not good".split()  # the model's, the last to set it
        assert rows.dtype == np.float32 and rows.shape == (5, 100)
        np.save("python_y.npy", y)
        np.save("python_rows.npy", rows)
        """)
    assert_is_mha_of_x(readme, readme["folder"] / "python_y.npy")
    # "as embed --model": the same rows as the CLI's, bit for bit.
    r = run_shell('attn embed --model negation.safetensors -o cli_rows.npy "the movie was not good"',
                  readme["folder"], readme["bindir"])
    assert r.returncode == 0, r.stdout
    assert np.array_equal(np.load(readme["folder"] / "python_rows.npy"),
                          np.load(readme["folder"] / "cli_rows.npy"))


def check_python_tour(readme, block):
    run_python(readme, "", block, """
        assert model.predict("the united [MASK] of america", k=3)[0][0] == "states"
        assert vectors.shape == (2, 100) and lm.task == "lm"
        """)


def check_python_mha_line(readme, block):
    run_python(readme, """
        import numpy as np, attn
        x = np.load("x.npy")
        """, block, """
        np.save("python_line_y.npy", y)
        """)
    assert_is_mha_of_x(readme, readme["folder"] / "python_line_y.npy")


def compile_and_run(readme, name, prelude, block, epilogue):
    """The block verbatim at namespace scope (its lines are all declarations) between a prelude
    that declares what it leaves to the reader and a main that reports; built against the
    library under test (ATTN_CXX, ATTN_LIB and ATTN_CXX_FLAGS from tests/CMakeLists.txt, else
    this build's compiler and build/lib/libattn.a)."""
    library = Path(os.environ.get("ATTN_LIB") or BUILD / "lib" / "libattn.a")
    if not library.exists():
        pytest.skip(f"no library to link at {library}")
    compiler = os.environ.get("ATTN_CXX")
    if not compiler:
        cache = (BUILD / "CMakeCache.txt").read_text()
        compiler = re.search(r"^CMAKE_CXX_COMPILER:\w+=(.*)$", cache, re.M).group(1)
    source = readme["folder"] / f"{name}.cpp"
    source.write_text("\n".join([textwrap.dedent(prelude), *block.lines, textwrap.dedent(epilogue)]))
    # A static libattn leaves fmt, OpenMP, liblzma and zlib to the program (README, "Installing").
    link = (["-lfmt", "-fopenmp", "-llzma", "-lz"] if library.suffix == ".a"
            else [f"-Wl,-rpath,{library.parent}"])
    build = subprocess.run([compiler, "-std=c++20", "-O1", *os.environ.get("ATTN_CXX_FLAGS", "").split(),
                            f"-I{ROOT / 'include'}", str(source), str(library), *link,
                            "-o", str(readme["folder"] / name)],
                           capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stderr
    r = subprocess.run([str(readme["folder"] / name)], cwd=readme["folder"], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return r.stdout


def check_cpp_library(readme, block):
    out = compile_and_run(readme, "library_snippet", """
        #include <attn/attn.hpp>
        #include <cstdio>
        #include <fstream>
        #include <vector>
        // What the block leaves to the reader: the shape, the caller's floats, k, v and x.
        const int64_t B = 2, H = 8, L = 128, D = 64;
        std::vector<float> storage(B * H * L * D, 0.25f);
        float* my_floats = storage.data();
        attn::tensor k({B, H, L, D}, 0.5f), v({B, H, L, D}, 1.0f);
        attn::tensor x = attn::read_npy("x.npy").values;
        """, block, """
        int main() {
          std::ofstream("cpp_y.npy", std::ios::binary) << attn::encode_npy(y);
          std::printf("%zu %lld %lld %lld %lld\\n", e.tokens.size(),
                      (long long)e.steps.weights.dim(0), (long long)e.steps.context.dim(1),
                      (long long)out.dim(2), (long long)out.dim(3));
        }
        """)
    assert out.split() == ["6", "6", "100", "128", "64"]
    assert_is_mha_of_x(readme, readme["folder"] / "cpp_y.npy")


def check_cpp_mha_line(readme, block):
    compile_and_run(readme, "mha_line", """
        #include <attn/attn.hpp>
        #include <fstream>
        attn::tensor x = attn::read_npy("x.npy").values;
        """, block, """
        int main() { std::ofstream("cpp_line_y.npy", std::ios::binary) << attn::encode_npy(y); }
        """)
    assert_is_mha_of_x(readme, readme["folder"] / "cpp_line_y.npy")


# The blocks that are neither sessions nor in NOT_RUN, by the start of their first line.
OTHER_BLOCKS = {
    'attn heatmap "the animal': check_heatmap_commands,
    "attn heatmap --model toy.safetensors": check_heatmap_commands,
    "attn mha --weights mha.safetensors": check_cli_mha,
    "# PYTHONPATH=build/python python3": check_python_library,
    "import attn": check_python_tour,
    "y = attn.MultiheadAttention.from_safetensors": check_python_mha_line,
    "#include <attn/attn.hpp>": check_cpp_library,
    "auto y = attn::MultiheadAttention::load": check_cpp_mha_line,
}


def key_of(block, keys):
    matches = [k for k in keys if block.first.startswith(k)]
    assert len(matches) <= 1, f"{block.where}: matches {matches}"
    return matches[0] if matches else None


def test_every_block_is_checked_or_listed():
    unaccounted, seen = [], set()
    for block in readme_blocks():
        if block.is_session:
            continue
        key = key_of(block, [*OTHER_BLOCKS, *NOT_RUN])
        if key is None:
            unaccounted.append(f"{block.where}: {block.first}")
        elif key in seen:
            unaccounted.append(f"{block.where}: a second block for {key!r}")
        seen.add(key)
    assert not unaccounted, "check these blocks in OTHER_BLOCKS or list them in NOT_RUN"
    assert seen == {*OTHER_BLOCKS, *NOT_RUN}, f"no README block for {({*OTHER_BLOCKS, *NOT_RUN}) - seen}"


OTHERS = [b for b in readme_blocks() if not b.is_session and key_of(b, OTHER_BLOCKS)]


@pytest.mark.parametrize("block", OTHERS, ids=[b.where for b in OTHERS])
def test_other_block_runs(readme, block):
    OTHER_BLOCKS[key_of(block, OTHER_BLOCKS)](readme, block)
