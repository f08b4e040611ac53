"""A typed program using attn as its users do; `mypy --strict` checks it against the shipped
stubs (python/attn/*.pyi) in `make test`, so a stub that drifts from the module shows."""
from typing import List, Tuple

import numpy as np
import numpy.typing as npt

import attn


def sentence_vectors(model: attn.TextModel, lines: List[str]) -> npt.NDArray[np.float32]:
    one_by_one = np.stack([model.embed(line, pool="mean", normalize=True) for line in lines])
    at_once: npt.NDArray[np.float32] = model.embed(lines, pool="mean", normalize=True)
    assert np.array_equal(one_by_one, at_once)
    return at_once


def fill(model: attn.TextModel, text: str) -> Tuple[str, float]:
    best: Tuple[str, float] = model.predict(text, k=1)[0]
    return best


def main() -> None:
    tokens, rows, weights = attn.embed("money bank grows")
    assert rows.shape[0] == len(tokens) and weights.shape == (3, 3)
    model = attn.TextModel.load("builtin")
    word, probability = fill(model, "he sat on the [MASK] of the river .")
    print(word, round(probability, 3), sentence_vectors(model, ["a cat", "a dog"]).shape)
    toks, per_token = model.embed("the bank", hide_token=True, layer=2)
    print(len(toks), per_token.dtype, model.dim, model.heads, model.task)
    lm = attn.TextModel.load("builtin-lm")
    text: str = lm.generate("the river", max_words=5, temperature=0.0)
    layers = lm.inspect("the river")["layers"]
    print(text, len(layers), attn.tokenize("Didn't"), lm.history["epochs"])
    vectors = attn.Vectors.load()
    print(len(vectors), vectors.dim, "bank" in vectors, vectors.nearest(vectors["bank"], k=3)[0][0])
    trained = attn.train("tests/data/seed003_toy.txt", task="next-word", epochs=1, progress=False,
                         callback=lambda event: None)
    trained.save("/tmp/attn-typing-toy.safetensors")
    try:
        attn.TextModel.load("missing.safetensors")
    except attn.InputError as e:
        print(e.kind, e.file)


if __name__ == "__main__":
    main()
