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


# pybind11's functions carry their signature only as a docstring's first line, which
# inspect.signature cannot read. Each public function and method is wrapped in a plain function
# whose __signature__ is read from that line (an overloaded one is left as it is: the docstring
# lists every form), so help(), IDEs and inspect.signature see the real parameters.
import ast as _ast
import functools as _functools
import inspect as _inspect


def _signature(fn, method):
    doc = (getattr(fn, "__doc__", None) or "").lstrip()
    if doc.split("\n", 1)[0].endswith("(*args, **kwargs)"):
        return None  # overloaded (TextModel.embed): no one signature is true; the docstring lists each form
    line = doc.split("\n", 1)[0]
    head, _, returns = line.partition(") -> ")
    try:
        tree = _ast.parse(f"def _{head[head.index('('):]}): pass").body[0].args
    except (SyntaxError, ValueError):
        return None
    kind = _inspect.Parameter
    params = []

    def add(arg, k, default=kind.empty):
        note = _ast.unparse(arg.annotation) if arg.annotation is not None else kind.empty
        params.append(kind(arg.arg, k, default=default, annotation=note))

    def value(node):
        try:
            return _ast.literal_eval(node)
        except ValueError:
            return _ast.unparse(node)

    positional = tree.posonlyargs + tree.args
    defaults = [kind.empty] * (len(positional) - len(tree.defaults)) + [value(d) for d in tree.defaults]
    for arg, default in zip(positional, defaults):
        add(arg, kind.POSITIONAL_OR_KEYWORD, default)
    if tree.vararg is not None:
        add(tree.vararg, kind.VAR_POSITIONAL)
    for arg, default in zip(tree.kwonlyargs, tree.kw_defaults):
        add(arg, kind.KEYWORD_ONLY, kind.empty if default is None else value(default))
    if tree.kwarg is not None:
        add(tree.kwarg, kind.VAR_KEYWORD)
    if method and params and params[0].name == "self":
        params[0] = params[0].replace(annotation=kind.empty)
    return _inspect.Signature(params, return_annotation=returns.strip() or _inspect.Signature.empty)


def _with_signature(fn, method=False):
    signature = _signature(fn, method)
    if signature is None:
        return fn

    @_functools.wraps(fn)
    def call(*args, **kwargs):
        return fn(*args, **kwargs)

    call.__signature__ = signature
    return call


for _name in ("embed", "sdpa", "tokenize", "train"):
    globals()[_name] = _with_signature(getattr(_attn, _name))
for _class in (MultiheadAttention, TextModel, TranslationModel, Vectors):
    for _name, _value in list(vars(_class).items()):
        if _name.startswith("_") and _name != "__call__":
            continue
        if isinstance(_value, staticmethod):
            setattr(_class, _name, staticmethod(_with_signature(_value.__func__)))
        elif type(_value).__name__ == "instancemethod":
            setattr(_class, _name, _with_signature(getattr(_class, _name), method=True))
del _name, _value, _class
