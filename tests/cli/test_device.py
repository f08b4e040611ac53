"""--device on sdpa, mha and bench: cpu is the default and the same computation; cuda needs a build
with -DATTN_CUDA=ON and a GPU (docs/GPU.md). Where either is missing (as on CI) it is one clear
usage error and nothing is written. The GPU results themselves are tested on a GPU machine
(tests/cuda/, scripts/gpu_check.sh)."""
import numpy as np
import pytest

from conftest import one_error_line, write_safetensors


@pytest.fixture
def qkv(tmp_path):
    rng = np.random.default_rng(0)
    paths = []
    for name in ("q", "k", "v"):
        p = tmp_path / f"{name}.npy"
        np.save(p, rng.standard_normal((1, 2, 5, 8)).astype(np.float32))
        paths.append(p)
    return paths


def sdpa_args(qkv, out, *extra):
    return ["sdpa", "--query", qkv[0], "--key", qkv[1], "--value", qkv[2], "-o", out, *extra]


def test_device_cpu_is_the_default(attn, qkv, tmp_path):
    a, b = tmp_path / "a.npy", tmp_path / "b.npy"
    assert attn(*sdpa_args(qkv, a)).code == 0
    r = attn(*sdpa_args(qkv, b, "--device", "cpu"))
    assert r.code == 0, r.err
    assert np.array_equal(np.load(a), np.load(b))


def test_device_cuda_without_a_gpu_build_is_one_usage_error(attn, qkv, tmp_path):
    out = tmp_path / "o.npy"
    r = attn(*sdpa_args(qkv, out, "--device", "cuda", "--dtype", "bf16"))
    if r.code == 0:
        pytest.skip("this build runs CUDA here (tests/cuda/ checks its results)")
    assert r.code == 1
    line = one_error_line(r)
    assert "-DATTN_CUDA=ON" in line or "no CUDA device" in line, line
    assert not out.exists()
    b = attn("bench", "--device", "cuda", "1,64,1,64")
    assert b.code == 1 and b.out == ""
    assert "-DATTN_CUDA=ON" in one_error_line(b) or "no CUDA device" in one_error_line(b)


@pytest.mark.parametrize("extra, message", [
    (["--device", "tpu"], "--device 'tpu': expected cpu or cuda"),
    (["--device", "cuda", "--kernel", "reference"], "no --kernel reference"),
    (["--device", "cuda", "--attn-weights-out", "W"], "does not form the weights"),
])
def test_device_usage_errors(attn, qkv, tmp_path, extra, message):
    out = tmp_path / "o.npy"
    extra = [str(tmp_path / x) if x == "W" else x for x in extra]
    r = attn(*sdpa_args(qkv, out, *extra))
    assert r.code == 1
    assert message in one_error_line(r)
    assert not out.exists()


def test_bench_device_usage_errors(attn):
    r = attn("bench", "--device", "gpu", "1,8,1,8")
    assert r.code == 1 and "--device 'gpu'" in one_error_line(r)
    r = attn("bench", "--device", "cuda", "--mha", "1,8,1,8")
    assert r.code == 1 and "fused sdpa only" in one_error_line(r)


@pytest.fixture
def mha_files(tmp_path):
    e = 8
    rng = np.random.default_rng(2)
    w = tmp_path / "w.safetensors"
    write_safetensors(w, {"in_proj_weight": rng.standard_normal((3 * e, e)), "in_proj_bias": rng.standard_normal(3 * e),
                          "out_proj.weight": rng.standard_normal((e, e)), "out_proj.bias": rng.standard_normal(e)})
    x = tmp_path / "x.npy"
    np.save(x, rng.standard_normal((2, 5, e)).astype(np.float32))
    return w, x


def test_mha_device_cpu_is_the_default_and_cuda_needs_a_gpu_build(attn, mha_files, tmp_path):
    w, x = mha_files
    a, b, c = tmp_path / "a.npy", tmp_path / "b.npy", tmp_path / "c.npy"
    base = ["mha", "--weights", w, "--heads", "2", "--query", x]
    assert attn(*base, "-o", a).code == 0
    r = attn(*base, "--device", "cpu", "-o", b)
    assert r.code == 0, r.err
    assert np.array_equal(np.load(a), np.load(b))
    r = attn(*base, "--device", "cuda", "--dtype", "bf16", "-o", c)
    if r.code == 0:  # a CUDA build on a GPU: the layer there, against the cpu's
        np.testing.assert_allclose(np.load(c), np.load(a), rtol=0, atol=3e-2 * np.abs(np.load(a)).max())
        return
    assert r.code == 1
    line = one_error_line(r)
    assert "-DATTN_CUDA=ON" in line or "no CUDA device" in line, line
    assert not c.exists()


@pytest.mark.parametrize("extra, message", [
    (["--device", "tpu"], "--device 'tpu': expected cpu or cuda"),
    (["--device", "cuda", "--attn-weights-out", "W"], "does not form the weights"),
])
def test_mha_device_usage_errors(attn, mha_files, tmp_path, extra, message):
    w, x = mha_files
    out = tmp_path / "o.npy"
    extra = [str(tmp_path / "weights.npy") if e == "W" else e for e in extra]
    r = attn("mha", "--weights", w, "--heads", "2", "--query", x, "-o", out, *extra)
    assert r.code == 1
    assert message in one_error_line(r)
    assert not out.exists()


# attn train --device cuda (the word models' training step on a GPU): on a build without CUDA, or
# with no GPU, one usage error before any data is read; the tasks that do not run there say so.
def test_train_device_cuda_without_a_gpu_is_one_usage_error(attn, tmp_path):
    text = tmp_path / "text.txt"
    text.write_text("the cat sat on the mat .\n" * 40)
    out = tmp_path / "m.safetensors"
    r = attn("train", "--task", "lm", "--data", text, "--learn-embeddings", "16", "--layers", "1", "--device", "cuda",
             "-o", out)
    if r.code == 0:
        pytest.skip("this build trains on a GPU here (tests/cuda/test_train_cuda.py checks it)")
    assert r.code == 1
    line = one_error_line(r)
    assert "-DATTN_CUDA=ON" in line or "no CUDA device" in line, line
    assert not out.exists() and not (tmp_path / "m.safetensors.checkpoint").exists()


@pytest.mark.parametrize("extra, message", [
    (["--task", "lm", "--device", "tpu"], "--device: tpu not in {cpu,cuda}"),
    (["--task", "classify", "--device", "cuda"], "--device is for --task masked-word and lm"),
])
def test_train_device_usage_errors(attn, tmp_path, extra, message):
    text = tmp_path / "text.txt"
    text.write_text("1\tthe cat sat on the mat\n" * 40)
    out = tmp_path / "m.safetensors"
    r = attn("train", "--data", text, "-o", out, *extra)
    assert r.code == 1
    assert message in one_error_line(r), one_error_line(r)
    assert not out.exists()
