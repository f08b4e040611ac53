"""attn.sdpa against the float64 math of PyTorch's scaled_dot_product_attention."""
import threading
import time

import numpy as np
import pytest

attn = pytest.importorskip("attn")
torch = pytest.importorskip("torch")

from torch_reference import REL, rel_error, sdpa as reference


def rand(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("b,h,hkv,l,s,d,causal", [
    (1, 1, 1, 1, 1, 1, False),
    (2, 3, 3, 5, 7, 9, False),
    (2, 4, 2, 13, 13, 16, True),    # grouped-query attention
    (1, 2, 1, 17, 5, 33, True),     # L > S: the first rows see some keys, the later all
    (1, 2, 2, 3, 19, 59, True),     # L < S
    (2, 8, 8, 64, 80, 64, False),
])
def test_sdpa_matches_torch(b, h, hkv, l, s, d, causal):
    rng = np.random.default_rng(b * 1000 + l * 10 + d)
    q, k, v = rand(rng, b, h, l, d), rand(rng, b, hkv, s, d), rand(rng, b, hkv, s, d)
    out, w = attn.sdpa(q, k, v, causal=causal, need_weights=True)
    want, want_w = reference(q, k, v, causal=causal)
    assert out.dtype == np.float32 and out.shape == (b, h, l, d) and w.shape == (b, h, l, s)
    assert rel_error(out, want) < REL, (b, h, hkv, l, s, d, causal)
    assert rel_error(w, want_w) < REL
    np.testing.assert_array_equal(attn.sdpa(q, k, v, causal=causal), out)


def test_scale_and_masks():
    rng = np.random.default_rng(7)
    q, k, v = rand(rng, 2, 2, 4, 8), rand(rng, 2, 2, 6, 8), rand(rng, 2, 2, 6, 8)
    bool_mask = rng.random((4, 6)) < 0.6
    bool_mask[:, 0] = True  # every query sees a key
    float_mask = rand(rng, 2, 1, 4, 6)  # broadcast over heads
    for kwargs in ({"scale": 0.3}, {"attn_mask": bool_mask}, {"attn_mask": float_mask},
                   {"attn_mask": float_mask.astype(np.float64), "scale": 1.0, "causal": True}):
        want, _ = reference(q, k, v, **kwargs)
        assert rel_error(attn.sdpa(q, k, v, **kwargs), want) < REL, kwargs


def test_fully_masked_row_is_zero():
    rng = np.random.default_rng(8)
    q, k, v = rand(rng, 1, 1, 3, 4), rand(rng, 1, 1, 5, 4), rand(rng, 1, 1, 5, 4)
    mask = np.ones((3, 5), bool)
    mask[1] = False
    out, w = attn.sdpa(q, k, v, attn_mask=mask, need_weights=True)
    assert np.all(out[0, 0, 1] == 0) and np.all(w[0, 0, 1] == 0)
    assert np.all(np.isfinite(out))


def test_strided_input_gives_the_same_result():
    rng = np.random.default_rng(9)
    q = rand(rng, 1, 2, 8, 5)
    strided = np.ascontiguousarray(q.transpose(0, 1, 3, 2)).transpose(0, 1, 3, 2)
    assert not strided.flags.c_contiguous
    np.testing.assert_array_equal(attn.sdpa(strided, strided, strided), attn.sdpa(q, q, q))


def test_inputs_are_not_modified_and_outputs_are_fresh():
    rng = np.random.default_rng(10)
    q = rand(rng, 1, 1, 4, 4)
    before = q.copy()
    out = attn.sdpa(q, q, q)
    np.testing.assert_array_equal(q, before)
    assert not np.shares_memory(out, q) and out.flags.writeable


def test_errors():
    q = np.zeros((1, 2, 3, 4), np.float32)
    with pytest.raises(TypeError, match="float32"):
        attn.sdpa(q.astype(np.float64), q, q)
    with pytest.raises(attn.UsageError) as e:
        attn.sdpa(q, np.zeros((1, 2, 3, 5), np.float32), q)
    assert isinstance(e.value, ValueError) and e.value.kind == "usage"
    with pytest.raises(ValueError):
        attn.sdpa(q[0], q[0], q[0])  # rank 3
    with pytest.raises(ValueError):
        attn.sdpa(q, np.zeros((1, 3, 3, 4), np.float32), np.zeros((1, 3, 3, 4), np.float32))
    with pytest.raises(TypeError):
        attn.sdpa(q, q, q, attn_mask=np.zeros((3, 3), np.int32))
    with pytest.raises(TypeError):
        attn.sdpa(q, q, q, True)  # causal is keyword-only


def test_gil_is_released_while_computing():
    # A Python thread keeps running during one long sdpa call: the longest pause it sees is a
    # small part of the call's time (were the GIL held, it would see the whole call).
    rng = np.random.default_rng(11)
    base = rand(rng, 1, 8, 1024, 64)
    attn.sdpa(base, base, base)  # warm: the first call pays for threads and pages
    # Double the batch until one call takes a fifth of a second on this machine, however fast
    # it is (a fixed size was too short on a fast CI machine).
    q = base
    while True:
        start = time.perf_counter()
        attn.sdpa(q, q, q)
        if time.perf_counter() - start >= 0.2 or q.shape[0] >= 128:
            break
        q = np.concatenate([q, q])
    took = []

    def work():
        t0 = time.perf_counter()
        attn.sdpa(q, q, q)
        took.append(time.perf_counter() - t0)

    worker = threading.Thread(target=work)
    stamps = [time.perf_counter()]
    worker.start()
    while worker.is_alive():
        stamps.append(time.perf_counter())
        time.sleep(0.001)
    worker.join()
    longest = max(np.diff(stamps))
    assert took[0] > 0.1, took  # long enough for the check to mean something
    assert longest < 0.5 * took[0], (longest, took[0])


def test_bf16_dtype_rounds_the_operands_and_keeps_float32_io():
    rng = np.random.default_rng(12)
    q, k, v = rand(rng, 1, 2, 65, 64), rand(rng, 1, 2, 70, 64), rand(rng, 1, 2, 70, 64)
    out = attn.sdpa(q, k, v, causal=True, dtype="bf16")
    assert out.dtype == np.float32 and out.shape == (1, 2, 65, 64)
    rounded = [torch.from_numpy(x).bfloat16().double().numpy() for x in (q, k, v)]
    exact, _ = reference(*rounded, causal=True)
    # bf16 operands: errors near bf16's 2^-8 relative, not float32's, and not the float32 result.
    assert rel_error(out, exact) < 1e-2
    assert not np.array_equal(out, attn.sdpa(q, k, v, causal=True))
    with pytest.raises(attn.UsageError):
        attn.sdpa(q, k, v, dtype="float8")


def test_device_cuda_needs_a_cuda_build_and_says_so():
    """device='cuda' runs attn's CUDA kernels where built (-DATTN_CUDA=ON) and a GPU answers;
    elsewhere (CI) it is one UsageError naming what is missing. tests/cuda/ checks the results."""
    rng = np.random.default_rng(3)
    q = rand(rng, 1, 2, 5, 8)
    try:
        out = attn.sdpa(q, q, q, device="cuda", dtype="bf16")
    except attn.UsageError as e:
        assert "-DATTN_CUDA=ON" in str(e) or "no CUDA device" in str(e)
    else:
        assert np.abs(out - attn.sdpa(q, q, q, dtype="bf16")).max() < 2e-2
    with pytest.raises(attn.UsageError, match="expected cpu or cuda"):
        attn.sdpa(q, q, q, device="tpu")
    with pytest.raises(attn.UsageError, match="need_weights"):
        attn.sdpa(q, q, q, device="cuda", need_weights=True)
