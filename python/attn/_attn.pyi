# Type stubs for attn's compiled core (python/*.cpp), re-exported by attn/__init__.py. Shapes are
# in the docstrings: B batch, H heads, L queries, S keys, D and Dv head widths, E model width.
import os
from typing import Any, Callable, Dict, List, Literal, Mapping, Optional, Tuple, Union, overload

import numpy as np
import numpy.typing as npt

__version__: str

_Array = npt.NDArray[np.float32]
_Path = Union[str, "os.PathLike[str]"]

class Error(ValueError):
    kind: str     # "usage" or "input"
    file: str     # the path at fault, or ""
    problem: str
    where: str    # offset, line or tensor, or ""

class UsageError(Error): ...
class InputError(Error): ...

def sdpa(q: npt.ArrayLike, k: npt.ArrayLike, v: npt.ArrayLike, *, causal: bool = False,
         scale: Optional[float] = None, attn_mask: Optional[npt.ArrayLike] = None,
         need_weights: bool = False, dtype: str = "float32", device: str = "cpu") -> Any:
    """softmax(scale·q·kᵀ [+ mask])·v: q [B,H,L,D], k [B,H,S,D], v [B,H,S,Dv] → [B,H,L,Dv]
    (and the weights [B,H,L,S] with need_weights: a tuple). device="cuda": attn's CUDA kernels."""

def tokenize(text: str) -> List[str]: ...

def train(data: Optional[_Path] = None, *, task: str = "next-word", output: Optional[_Path] = None,
          vectors: Union[None, _Path, "Vectors"] = None, callback: Optional[Callable[[Dict[str, Any]], Any]] = None,
          progress: bool = True, **options: Any) -> Union["TextModel", "TranslationModel"]:
    """attn train from Python: the same options (train_options's names, and threads), defaults,
    option ranges, file-roles check and model file."""

class MultiheadAttention:
    @staticmethod
    def from_safetensors(path: _Path, num_heads: int) -> "MultiheadAttention": ...
    @staticmethod
    def from_state_dict(state_dict: Mapping[str, npt.ArrayLike], num_heads: int) -> "MultiheadAttention": ...
    def __call__(self, query: npt.ArrayLike, key: Optional[npt.ArrayLike] = None,
                 value: Optional[npt.ArrayLike] = None, *, causal: bool = False,
                 key_padding_mask: Optional[npt.ArrayLike] = None, attn_mask: Optional[npt.ArrayLike] = None,
                 need_weights: bool = False, average_attn_weights: bool = True, dtype: str = "float32",
                 device: str = "cpu") -> Any:
        """query [B,L,E] (or [L,E]) → output [B,L,E]; (output, weights) with need_weights."""
    @property
    def embed_dim(self) -> int: ...
    @property
    def num_heads(self) -> int: ...
    @property
    def head_dim(self) -> int: ...
    @property
    def kdim(self) -> int: ...
    @property
    def vdim(self) -> int: ...
    @property
    def bias(self) -> bool: ...

class Vectors:
    @staticmethod
    def load(path: Optional[_Path] = None) -> "Vectors": ...
    def __len__(self) -> int: ...
    def __contains__(self, word: str) -> bool: ...
    def __getitem__(self, word: str) -> _Array:
        """The word's vector [d]."""
    def nearest(self, vector: npt.ArrayLike, k: int = 10) -> List[Tuple[str, float]]: ...
    @property
    def dim(self) -> int: ...
    @property
    def source(self) -> str: ...

@overload
def embed(text: str, vectors: Optional[Vectors] = None, scale: Union[None, str, float] = None,
          strict: bool = False) -> Tuple[List[str], _Array, _Array]:
    """(tokens, contextual embeddings [N,d], attention [N,N])."""
@overload
def embed(text: str, *, model: Union["TextModel", _Path], strict: bool = False) -> Tuple[List[str], _Array, None]: ...

class TextModel:
    @staticmethod
    def load(path: _Path) -> "TextModel":
        """A model file from attn train, or "builtin" / "builtin-lm"."""
    @overload
    def embed(self, text: str, strict: bool = False, *, pool: None = None, normalize: bool = False,
              hide_token: bool = False, layer: Optional[int] = None) -> Tuple[List[str], _Array]:
        """(tokens, embeddings [L,E]): the last block's output per token (layer=k: layer k's)."""
    @overload
    def embed(self, text: str, strict: bool = False, *, pool: str, normalize: bool = False,
              hide_token: bool = False, layer: Optional[int] = None) -> _Array:
        """One sentence vector [E] (pool: "mean", "max", "cls", "last")."""
    @overload
    def embed(self, texts: List[str], strict: bool = False, *, pool: None = None, normalize: bool = False,
              hide_token: bool = False, layer: Optional[int] = None) -> List[Tuple[List[str], _Array]]:
        """Many texts at once: (tokens, embeddings [L_i, E]) for each."""
    @overload
    def embed(self, texts: List[str], strict: bool = False, *, pool: str, normalize: bool = False,
              hide_token: bool = False, layer: Optional[int] = None) -> _Array:
        """Many texts at once: their sentence vectors [N, E]."""
    def save(self, path: _Path) -> None: ...
    def predict(self, text: str, k: int = 5) -> List[Tuple[str, float]]: ...
    def evaluate(self, path: _Path, *, every: int = 7, seed: int = 0) -> Dict[str, Any]: ...
    # n_best=0 (the default) gives a str, any other a list: mypy calls the overlap unsafe since
    # Literal[0] is an int too, but the first overload wins for 0, as the module behaves.
    @overload
    def generate(self, prompt: str = "", *, max_words: int = 100, temperature: float = 1.0,  # type: ignore[misc]
                 top_k: int = 0, top_p: float = 1.0, seed: int = 0, ignore_eos: bool = False, beam: int = 0,
                 n_best: Literal[0] = 0, length_penalty: float = 1.0) -> str:
        """The continuation only, starting with the space that joins it to the prompt:
        prompt + generate(prompt) is the line attn generate prints."""
    @overload
    def generate(self, prompt: str = "", *, max_words: int = 100, temperature: float = 1.0, top_k: int = 0,
                 top_p: float = 1.0, seed: int = 0, ignore_eos: bool = False, beam: int = 0,
                 n_best: int, length_penalty: float = 1.0) -> List[Tuple[str, float]]:
        """Beam search's n_best (text, score) pairs, best first."""
    def inspect(self, text: str, top: int = 5) -> Dict[str, Any]:
        """{"tokens", "unknown", "causal", "scale", "mask_position", "layers"}; each layer {"q",
        "k", "v" [H,L,D], "weights" [H,L,L], "predictions"}."""
    @property
    def history(self) -> Dict[str, List[Dict[str, Any]]]:
        """A masked-word or lm epoch without held-out text has eval_loss and accuracy None."""
    @property
    def labels(self) -> List[str]: ...
    @property
    def task(self) -> str: ...
    @property
    def dim(self) -> int: ...
    @property
    def heads(self) -> int: ...

class TranslationModel:
    @staticmethod
    def load(path: _Path) -> "TranslationModel":
        """A model file from attn train --task translate."""
    def save(self, path: _Path) -> None: ...
    @overload
    def translate(self, text: str, *, beam: int = 5, length_penalty: float = 1.0, max_length: int = 0) -> str: ...
    @overload
    def translate(self, text: List[str], *, beam: int = 5, length_penalty: float = 1.0,
                  max_length: int = 0) -> List[str]: ...
    def hypotheses(self, text: str, *, beam: int = 5, n_best: int = 1, length_penalty: float = 1.0,
                   max_length: int = 0, alignment: bool = False) -> List[Dict[str, Any]]:
        """{"text", "pieces", "score", "log_probability", "ended", "alignment"}, best first."""
    def attention(self, text: str, *, beam: int = 5) -> Dict[str, Any]:
        """{"source", "target", "read", "text", "encoder", "decoder", "cross"}: per layer [H, rows, columns]."""
    def evaluate(self, sources: List[str], references: List[str], *, beam: int = 5,
                 length_penalty: float = 1.0) -> Dict[str, Any]: ...
    def pieces(self, text: str) -> List[str]: ...
    @property
    def config(self) -> Dict[str, int]: ...
