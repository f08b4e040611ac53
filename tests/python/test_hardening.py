"""Issue #27 through the Python module: messages that quote raw bytes still decode, and a scale
whose scores overflow float32 is an error, never NaN."""
import numpy as np
import pytest

attn = pytest.importorskip("attn")


def test_an_error_quoting_raw_bytes_is_an_input_error(tmp_path):
    f = tmp_path / "f.txt"
    f.write_bytes(b"river 0.1 0.2 0.3\nbank 0.4 0.\xe95\r 0.6\n")
    with pytest.raises(attn.InputError) as caught:
        attn.Vectors.load(str(f))
    message = str(caught.value)
    assert "\\xE9" in message and "\r" not in message
    assert caught.value.file == str(f)


def test_a_scale_that_overflows_float32_is_a_usage_error():
    q = np.random.default_rng(0).standard_normal((1, 2, 5, 4)).astype(np.float32)
    with pytest.raises(attn.UsageError, match="overflow float32"):
        attn.sdpa(q, q, q, scale=3e38)
    assert np.isfinite(attn.sdpa(q, q, q, scale=3.0)).all()  # a scale past 1 that fits is fine
