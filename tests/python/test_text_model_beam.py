"""TextModel.generate(beam=…, n_best=…, length_penalty=…) (issue #53, item 3): the keywords of
attn generate's --beam, --n-best and --length-penalty, and their errors."""
import pytest

attn = pytest.importorskip("attn")


@pytest.fixture(scope="module")
def lm():
    return attn.TextModel.load("builtin-lm")


def test_beam_one_without_penalty_is_greedy(lm):
    assert (lm.generate("The river", max_words=20, beam=1, length_penalty=0)
            == lm.generate("The river", max_words=20, temperature=0))


def test_n_best_gives_text_score_pairs_best_first(lm):
    best = lm.generate("The river", max_words=15, beam=4)
    pairs = lm.generate("The river", max_words=15, beam=4, n_best=3)
    assert len(pairs) == 3 and pairs[0][0] == best
    assert all(isinstance(t, str) and isinstance(s, float) for t, s in pairs)
    assert [s for _, s in pairs] == sorted((s for _, s in pairs), reverse=True)


@pytest.mark.parametrize("kwargs", [dict(beam=-1), dict(n_best=2), dict(beam=2, n_best=3),
                                    dict(beam=2, length_penalty=11.0), dict(beam=2, n_best=-1)])
def test_bad_values_are_usage_errors(lm, kwargs):
    with pytest.raises(attn.UsageError):
        lm.generate("The river", max_words=5, **kwargs)
