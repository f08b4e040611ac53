# The package's public names are its compiled core's (attn/_attn.pyi).
from ._attn import (Error as Error, InputError as InputError, MultiheadAttention as MultiheadAttention,
                    TextModel as TextModel, TranslationModel as TranslationModel,
                    UsageError as UsageError, Vectors as Vectors,
                    __version__ as __version__, embed as embed, sdpa as sdpa, tokenize as tokenize,
                    train as train)
