"""attn: self-attention in plain C++, from Python.

    attn.sdpa(q, k, v, *, causal=False, scale=None, attn_mask=None, need_weights=False)
    attn.MultiheadAttention.from_safetensors(path, num_heads)(query, key=None, value=None, ...)
    attn.Vectors.load(path=None)
    attn.embed(text, vectors=None, scale=None) -> (tokens, embeddings, attention)
    attn.TextModel.load(path): .embed(text), .predict(text, k=5), .evaluate(path), .generate(...),
        .inspect(text), .history, .labels
    attn.embed(text, model=TextModel or path) -> (tokens, embeddings, None)

Arrays are NumPy float32; results are NumPy float32 arrays. Errors are attn.Error (a
ValueError), as attn.UsageError or attn.InputError; wrong array types raise TypeError.

The compiled core is attn._attn (the C++ library, its embedded vectors and models); this package
re-exports it, so `import attn` is all a user writes.
"""
from . import _attn
from ._attn import *  # noqa: F401,F403  (the public names of the compiled core)
from ._attn import __version__  # noqa: F401

# The core's classes and errors say they are attn's, not attn._attn's, in reprs and tracebacks.
for _name in dir(_attn):
    _value = getattr(_attn, _name)
    if isinstance(_value, type) and getattr(_value, "__module__", "") in ("attn._attn", "_attn"):
        try:
            _value.__module__ = "attn"
        except (AttributeError, TypeError):
            pass
del _name, _value
