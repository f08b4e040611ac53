"""attn generate --beam N [--n-best K] [--length-penalty A] (issue #53, item 3): beam search
through src/decode/, its n-best list, its length penalty, and the usage errors of its flags."""
import os

import pytest

from conftest import ATTN, one_error_line, run_attn

DATA = os.environ.get("ATTN_TEST_DATA") or os.path.join(os.path.dirname(__file__), "..", "data")
TOY = os.path.join(DATA, "seed003_toy.txt")
PROMPTS = ["", "The river", "In 1850 the city"]


@pytest.fixture(scope="module")
def toy_lm(tmp_path_factory):
    """Seed 003's toy text as a language model: four words, context 4 (beam search past it)."""
    if not os.path.exists(ATTN):
        pytest.fail(f"attn binary not found at {ATTN} (build first, or set ATTN_BIN)")
    out = tmp_path_factory.mktemp("toy-lm") / "toy.safetensors"
    r = run_attn("train", "--task", "lm", "--data", TOY, "--context", "4", "--learn-embeddings", "8",
                 "--heads", "1", "--epochs", "4", "--threads", "1", "-o", out)
    assert r.code == 0, r.err
    return out


def generate(*args):
    r = run_attn("generate", "--threads", "1", *args)
    assert r.code == 0, r.err
    return r.out


@pytest.mark.parametrize("prompt", PROMPTS)
def test_beam_one_without_length_penalty_prints_what_greedy_prints(prompt):
    assert (generate("--beam", "1", "--length-penalty", "0", "--max-words", "30", prompt)
            == generate("--temperature", "0", "--max-words", "30", prompt))


def test_beam_search_is_deterministic_and_prints_one_line_from_the_prompt():
    out = generate("--beam", "4", "--max-words", "25", "The river")
    assert out == generate("--beam", "4", "--max-words", "25", "The river")
    assert out.startswith("The river") and out.endswith("\n") and out.count("\n") == 1


def test_n_best_prints_k_scored_lines_best_first_and_the_first_is_the_beams_line():
    best = generate("--beam", "5", "--max-words", "20", "The river")
    out = generate("--beam", "5", "--n-best", "3", "--max-words", "20", "The river")
    lines = out.splitlines()
    assert len(lines) == 3, out
    scores = [float(line.split("\t", 1)[0]) for line in lines]
    texts = [line.split("\t", 1)[1] for line in lines]
    assert scores == sorted(scores, reverse=True) and all(s <= 0 for s in scores)
    assert all(t.startswith("The river") for t in texts) and len(set(texts)) == 3
    assert texts[0] + "\n" == best


def test_n_best_equal_to_beam_lists_the_whole_beam(toy_lm):
    lines = generate("--model", toy_lm, "--beam", "3", "--n-best", "3", "--max-words", "12", "like").splitlines()
    assert len(lines) == 3


def test_the_length_penalty_moves_the_length():
    """A negative α favours short texts, a positive one long ones (|Y|^α)."""
    def words(alpha):
        out = generate("--beam", "4", "--length-penalty", alpha, "--max-words", "40", "The river")
        return len(out.split())
    assert words("-3") < words("3")


def test_ignore_eos_makes_every_word_and_the_toy_model_goes_past_its_context(toy_lm):
    out = generate("--model", toy_lm, "--beam", "3", "--ignore-eos", "--max-words", "15", "like")
    r = run_attn("tokenize", "--model", toy_lm, out.strip())
    assert r.code == 0, r.err
    assert r.out.split()[-1] == "<eos>"  # tokenize ends the paragraph
    assert len(r.out.split()) == 1 + 15 + 1, (out, r.out)  # the prompt's word and fifteen made


@pytest.mark.parametrize("args, says", [
    (["--beam", "0"], "--beam: must be more than 0, not 0"),
    (["--beam", "-2"], "--beam: must be more than 0, not -2"),
    (["--beam", "four"], "--beam: 'four' is not a number"),
    (["--n-best", "2"], "--n-best requires --beam"),
    (["--beam", "2", "--n-best", "0"], "--n-best: must be more than 0, not 0"),
    (["--beam", "2", "--n-best", "3"], "--n-best must be at most --beam (2), got 3"),
    (["--length-penalty", "1"], "--length-penalty requires --beam"),
    (["--beam", "2", "--length-penalty", "11"], "--length-penalty: must be in [-10, 10], not 11"),
    (["--beam", "2", "--length-penalty", "nan"], "--length-penalty: must be in [-10, 10], not nan"),
    (["--beam", "2", "--temperature", "0"], "--temperature excludes --beam"),
    (["--beam", "2", "--top-k", "5"], "--top-k excludes --beam"),
    (["--beam", "2", "--top-p", "0.9"], "--top-p excludes --beam"),
    (["--beam", "2", "--seed", "3"], "--seed excludes --beam"),
    (["--beam", "2", "--timings"], "--beam excludes --timings"),
])
def test_bad_beam_flags_are_one_usage_error_and_print_nothing(args, says):
    r = run_attn("generate", *args, "The river")
    assert r.code == 1, (r.code, r.out, r.err)
    assert r.out == ""
    assert says in one_error_line(r)
