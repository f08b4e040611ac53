"""Issue #52, second hardening pass, on generation and the text a model reads: generate streams
in flat memory (12), reports a failed write and checks every option before it writes (13); a NUL
in a prompt is whitespace and tokenize refuses text that is not UTF-8, as train and eval do (14);
a text longer than a model's context is read in part with a warning, the same for heatmap,
embed, predict and neighbors (11); a language model's unknown words are read as <unk> (20)."""
import json
import os
import subprocess
import time

import pytest

from conftest import ATTN, one_error_line, run_attn

DATA = os.environ.get("ATTN_TEST_DATA") or os.path.join(os.path.dirname(__file__), "..", "data")
TOY = os.path.join(DATA, "seed003_toy.txt")
CONTEXT = 4  # the toy model's: a text of more tokens than this is cut


@pytest.fixture(scope="module")
def toy_lm(tmp_path_factory):
    """A language model small enough to make tokens fast: seed 003's toy (four words), context 4,
    learned embeddings of width 8."""
    if not os.path.exists(ATTN):
        pytest.fail(f"attn binary not found at {ATTN} (build first, or set ATTN_BIN)")
    out = tmp_path_factory.mktemp("toy-lm") / "toy.safetensors"
    r = run_attn("train", "--task", "lm", "--data", TOY, "--context", str(CONTEXT), "--learn-embeddings", "8",
                 "--heads", "1", "--epochs", "4", "--threads", "1", "-o", out)
    assert r.code == 0, r.err
    return out


def generate_peak_kib(model, words):
    """Peak resident memory (KiB) of `generate --ignore-eos --max-words words`, output discarded:
    the kernel's high-water mark of the process's own memory (VmHWM), read until it exits. (Its
    rusage would not do: the child's peak counts the memory of the Python process it was forked
    from.) The last reading is within a few milliseconds of the end, so of the peak."""
    p = subprocess.Popen([ATTN, "generate", "--model", str(model), "--ignore-eos", "--max-words", str(words),
                          "--threads", "1", "--seed", "3", "like"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    peak = 0
    while p.poll() is None:
        try:
            with open(f"/proc/{p.pid}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        peak = max(peak, int(line.split()[1]))
        except OSError:
            pass  # gone between poll and open
        time.sleep(0.005)
    assert p.returncode == 0
    return peak


# ---- 12. a long generation streams in the memory of its context ----

@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads /proc/PID/status (Linux)")
@pytest.mark.skipif("sanitize" in os.environ.get("ATTN_CXX_FLAGS", ""),
                    reason="AddressSanitizer holds freed blocks back (its quarantine), so the peak grows "
                           "with every token there; the Release run measures it")
def test_generate_memory_stays_flat_however_many_tokens_it_makes(toy_lm):
    # Before, every token, its text and its time were kept (~64 bytes a token): 180,000 more
    # tokens were ~11 MiB more. Now only the context's window and running totals are: the peak
    # may move by the allocator's noise, well under 3 MiB.
    small = generate_peak_kib(toy_lm, 20_000)
    large = generate_peak_kib(toy_lm, 200_000)
    assert small > 0 and large - small < 3 * 1024, (small, large)


def test_generate_timings_still_report_every_position(toy_lm):
    r = run_attn("generate", "--model", toy_lm, "--ignore-eos", "--max-words", "1200", "--timings",
                 "--threads", "1", "like")
    assert r.code == 0, r.err
    report = json.loads(r.err.strip().splitlines()[-1])
    assert report["tokens"] == 1200 and report["prompt_tokens"] == 2, report
    assert sorted(report["ms_per_token_at"], key=int) == ["10", "100", "500", "1000"], report
    assert report["tokens_per_second"] > 0 and report["first_token_ms"] >= 0, report
    assert len(r.out.split()) == 1201, r.out[:200]  # the prompt and every token


# ---- 13. generate: a failed write is an error; every option is checked before any output ----

def test_generate_reports_a_full_disk(toy_lm):
    with open("/dev/full", "wb") as full:
        p = subprocess.run([ATTN, "generate", "--model", str(toy_lm), "--max-words", "50", "--ignore-eos",
                            "like"], stdout=full, stderr=subprocess.PIPE, timeout=120)
    err = p.stderr.decode()
    assert p.returncode == 2, err  # an output error, as every other command reports it
    lines = [l for l in err.splitlines() if l.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: <stdout>: cannot write"), err


@pytest.mark.parametrize("option", [["--top-p", "0"], ["--top-p", "1.5"], ["--top-p", "nan"],
                                    ["--temperature", "-1"], ["--temperature", "inf"], ["--top-k", "-1"],
                                    ["--max-words", "-1"], ["--seed", "-1"]])
def test_generate_checks_every_option_before_writing(toy_lm, option):
    r = run_attn("generate", "--model", toy_lm, *option, "like hate")
    assert r.code == 1, (option, r.err)
    assert option[0] in one_error_line(r), (option, r.err)
    assert r.raw == b"", (option, r.out)  # not even the prompt


def test_generate_help_gives_the_ranges_it_accepts(toy_lm):
    help_text = run_attn("generate", "--help").out
    top_p = " ".join(next(l for l in help_text.splitlines() if "--top-p" in l).split())
    assert "(0 - 1]" in top_p and "[0 - 1]" not in top_p, top_p
    # Each end of the range as the help gives it.
    assert run_attn("generate", "--model", toy_lm, "--top-p", "1", "--max-words", "2", "like").code == 0
    assert run_attn("generate", "--model", toy_lm, "--top-p", "1e-9", "--max-words", "2", "like").code == 0
    temperature = " ".join(next(l for l in help_text.splitlines() if "--temperature" in l).split())
    assert "[0 - 100]" in temperature, temperature
    assert run_attn("generate", "--model", toy_lm, "--temperature", "100", "--max-words", "2", "like").code == 0
    assert run_attn("generate", "--model", toy_lm, "--temperature", "0", "--max-words", "2", "like").code == 0
    assert run_attn("generate", "--model", toy_lm, "--temperature", "100.5", "like").code == 1


# ---- 14. a NUL is whitespace, as in training; tokenize refuses what is not UTF-8 ----

def test_a_nul_in_a_stdin_prompt_is_whitespace(toy_lm):
    r = run_attn("generate", "--model", toy_lm, "--temperature", "0", "--max-words", "3", "-",
                 stdin=b"like\0hate do\n")
    assert r.code == 0, r.err
    assert r.out.startswith("like hate do "), r.out  # before: "like" and the continuation
    spaced = run_attn("generate", "--model", toy_lm, "--temperature", "0", "--max-words", "3", "like hate do")
    assert r.out == spaced.out  # the model read the same prompt
    # tokenize reads it the same way.
    t = run_attn("tokenize", "--model", toy_lm, "-", stdin=b"like\0hate do\n")
    assert t.code == 0 and t.out == "like hate do <eos>\n", (t.out, t.err)


def test_tokenize_refuses_text_that_is_not_utf8_as_train_does(toy_lm, tmp_path):
    bad = tmp_path / "latin1.txt"
    bad.write_bytes(b"like hate\ndo caf\xe9 like\n")
    out = tmp_path / "tokens.txt"
    r = run_attn("tokenize", "--model", toy_lm, "--data", bad, "-o", out)
    assert r.code == 2, r.err
    line = one_error_line(r)
    assert f"{bad}: not UTF-8 text (byte 0xE9)" in line and line.endswith("line 2"), line
    assert not out.exists()
    # The trainers' words exactly.
    t = run_attn("train", "--task", "lm", "--data", bad, "-o", tmp_path / "never.safetensors")
    assert t.code == 2 and one_error_line(t) == line, (t.err, line)
    # Standard input, and the text as an argument: the byte's offset.
    r = run_attn("tokenize", "--model", toy_lm, "-", stdin=b"like caf\xe9")
    assert r.code == 2 and one_error_line(r).startswith("error: <stdin>: not UTF-8 text (byte 0xE9)"), r.err
    assert one_error_line(r).endswith("byte 8"), r.err
    p = subprocess.run([ATTN, "tokenize", "--model", str(toy_lm), b"do caf\xc3\x28"], capture_output=True)
    err = p.stderr.decode("utf-8", "replace")
    assert p.returncode == 2 and "error: TEXT: not UTF-8 text (byte 0xC3)" in err and "byte 6" in err, err


# ---- 11. a text longer than the context: read in part, with one warning ----

LONG = "like hate do not like like hate"  # 7 words: 8 tokens with the one that starts a text


def cut_warnings(r):
    return [l for l in r.err.splitlines() if "longer than the model's context" in l]


@pytest.mark.parametrize("command", ["heatmap", "embed", "predict", "neighbors"])
def test_a_text_longer_than_the_context_is_read_in_part_with_a_warning(toy_lm, tmp_path, command):
    extra = {"heatmap": ["-o", tmp_path / "map.svg"], "embed": ["-o", tmp_path / "e.npy"],
             "predict": [], "neighbors": ["--word", "hate"]}[command]
    r = run_attn(command, "--model", toy_lm, *extra, LONG)
    assert r.code == 0, r.err
    assert cut_warnings(r) == [f"warning: the text is longer than the model's context: 8 tokens, the model "
                               f"reads the last {CONTEXT} (its context)"], r.err
    short = run_attn(command, "--model", toy_lm, *extra, "like hate")
    assert short.code == 0 and cut_warnings(short) == [], short.err


def test_the_builtin_context_model_warns_the_same_way(tmp_path):
    text = " ".join(["the cat sat on the mat"] * 100)  # 600 known words, past its context
    r = run_attn("embed", "--model", "builtin", "-o", tmp_path / "e.npy", text)
    assert r.code == 0, r.err
    [line] = cut_warnings(r)
    assert line.startswith("warning: the text is longer than the model's context: 600 tokens, the model reads "
                           "the last "), line


# ---- 20. a language model reads an unknown word as <unk>: heatmap says so ----

def test_heatmap_on_a_language_model_says_unknown_words_are_read_as_unk(toy_lm, tmp_path):
    page = tmp_path / "map.html"
    r = run_attn("heatmap", "--model", toy_lm, "-o", page, "like zebra")
    assert r.code == 0, r.err
    assert "warning: read as <unk>, not known to the model: zebra" in r.err, r.err
    assert "left out" not in r.err.lower(), r.err
    html = page.read_text()
    assert "Read as &lt;unk&gt;, not known to the model: zebra" in html
    assert "Left out" not in html
