"""ctypes binding of libattn_cuda.so (src/cuda/c_api.cpp) for PyTorch CUDA tensors: the device
tests (tests/cuda/) and the GPU benchmark (bench/gpu/) call attn's kernels on the same device
memory as PyTorch's. The library comes from ATTN_CUDA_LIB or build/lib/libattn_cuda.so."""
import ctypes
import os

import torch

_TYPES = {torch.float32: 0, torch.bfloat16: 1, torch.float16: 2}


def library_path():
    return os.environ.get("ATTN_CUDA_LIB") or os.path.join(
        os.path.dirname(__file__), "..", "..", "build", "lib", "libattn_cuda.so")


_lib = None


def lib():
    global _lib
    if _lib is None:
        _lib = ctypes.CDLL(library_path())
        p, i64, f, i = ctypes.c_void_p, ctypes.c_int64, ctypes.c_float, ctypes.c_int
        _lib.attn_cuda_sdpa_forward.argtypes = [i, p, p, p, p, p, i64, i64, i64, i64, i64, i64, i64, f, i, p, p, p]
        _lib.attn_cuda_sdpa_backward.argtypes = [i, p, p, p, p, p, p, p, p, p, p, i64, i64, i64, i64, i64, i64,
                                                 i64, f, i, p, p, p]
        _lib.attn_cuda_last_error.restype = ctypes.c_char_p
        _lib.attn_cuda_forward_path.restype = ctypes.c_char_p
        _lib.attn_cuda_forward_path.argtypes = [i, i64, i64]
    return _lib


def forward_path(dtype, D, Dv):
    return lib().attn_cuda_forward_path(_TYPES[dtype], D, Dv).decode()


def _require(*tensors):
    """The C interface reads raw pointers: dense CUDA tensors of one supported dtype."""
    dtype = tensors[0].dtype
    for t in tensors:
        if not t.is_cuda or not t.is_contiguous() or t.dtype != dtype or dtype not in _TYPES:
            raise ValueError("attn_cuda takes contiguous CUDA tensors of one dtype (float32, bfloat16, float16); "
                             f"got {t.dtype}, contiguous={t.is_contiguous()}, device={t.device}")


def _stream():
    return ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)


def _check(rc):
    if rc != 0:
        raise RuntimeError(lib().attn_cuda_last_error().decode())


def _mask_args(mask, B, H, L, S):
    """An additive float32 mask broadcast to [B, H, L, S]: its pointer and the four strides."""
    if mask is None:
        return None, None, None
    m = mask.to(torch.float32)
    while m.dim() < 4:
        m = m.unsqueeze(0)
    m = m.contiguous()
    strides = [0 if m.shape[i] == 1 else m.stride(i) for i in range(4)]
    arr = (ctypes.c_int64 * 4)(*strides)
    return (m, arr), m.data_ptr(), ctypes.cast(arr, ctypes.c_void_p)


def sdpa_forward(q, k, v, causal=False, scale=None, mask=None, out=None, lse=None):
    """o [B, H, L, Dv] in q's dtype and lse [B, H, L] float32. out/lse may be given (views into
    guarded buffers)."""
    B, H, L, D = q.shape
    Hkv, S, Dv = k.shape[1], k.shape[2], v.shape[3]
    if out is None:
        out = torch.empty(B, H, L, Dv, dtype=q.dtype, device=q.device)
    if lse is None:
        lse = torch.empty(B, H, L, dtype=torch.float32, device=q.device)
    _require(q, k, v, out)
    _require(lse)
    scale = D ** -0.5 if scale is None else scale
    keep, mptr, ms = _mask_args(mask, B, H, L, S)
    _check(lib().attn_cuda_sdpa_forward(_TYPES[q.dtype], q.data_ptr(), k.data_ptr(), v.data_ptr(), out.data_ptr(),
                                        lse.data_ptr(), B, H, Hkv, L, S, D, Dv, scale, int(causal), mptr, ms,
                                        _stream()))
    return out, lse


def sdpa_backward(q, k, v, o, lse, grad_o, causal=False, scale=None, mask=None, dq=None, dk=None, dv=None):
    B, H, L, D = q.shape
    Hkv, S, Dv = k.shape[1], k.shape[2], v.shape[3]
    dq = torch.empty_like(q) if dq is None else dq
    dk = torch.empty_like(k) if dk is None else dk
    dv = torch.empty_like(v) if dv is None else dv
    _require(q, k, v, o, grad_o, dq, dk, dv)
    _require(lse)
    work = torch.empty(B * H * L, dtype=torch.float32, device=q.device)
    scale = D ** -0.5 if scale is None else scale
    keep, mptr, ms = _mask_args(mask, B, H, L, S)
    _check(lib().attn_cuda_sdpa_backward(_TYPES[q.dtype], q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(),
                                         lse.data_ptr(), grad_o.data_ptr(), dq.data_ptr(), dk.data_ptr(),
                                         dv.data_ptr(), work.data_ptr(), B, H, Hkv, L, S, D, Dv, scale,
                                         int(causal), mptr, ms, _stream()))
    return dq, dk, dv
