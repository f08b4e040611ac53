"""Calls the stubs must reject: the check that the type check can fail."""
import attn

model = attn.TextModel.load(3)
words: int = model.predict("a [MASK] b")
attn.embed("x", scaling=2)
