#!/usr/bin/env python3
"""The PyTorch twin of the encoder of an attn masked-word model (`attn train --task masked-word`; a
classifier's encoder is the same network, untried), for bench/context_speed: the same forward on
the same weights, so that `attn embed --model M` and this module give the same numbers and their
speeds compare like with like.

Network, as src/train/text_model.cpp, src/nn/network.cpp and src/nn/encoder_block.cpp build it from
the model file's config: ids → embedding rows (the default vectors' 50,000 GloVe rows, or the file's
stored table, followed by the learned rows of `embedding.new_words`, which replace a default word's
row) + learned positions (`position.weight`) → L × nn.TransformerEncoderLayer (ReLU, no dropout:
attn drops out only while training; post-norm, or pre-norm with `norm_first`) → for pre-norm a final
LayerNorm (`final_norm`). The result, one row per token, is what `attn embed --model M` prints
(cache.y: the last block's output); --pool mean averages a sentence's rows. The output head
(`output.*`) is not part of it. Tensors map one to one (names from attn, right: PyTorch):

  embedding.new_words                          appended to the default (or stored) table's rows
  position.weight                              ContextEncoder.position
  layers.N.attention.{q,k,v}_proj_{weight,bias}  layers[N].self_attn.in_proj_{weight,bias} (q; k; v)
  layers.N.attention.out_proj.{weight,bias}    layers[N].self_attn.out_proj (weights [out, in], as attn)
  layers.N.{norm1,norm2,linear1,linear2}.*      layers[N].{norm1,norm2,linear1,linear2}.*
  final_norm.{weight,bias}                     ContextEncoder.final_norm

The twin does not tokenise: it reads attn's tokens (`attn embed --format json` gives each text's
known tokens), so both see the same ids. Alone:

  torch_context_model.py --model builtin the bank of the river        # one JSON line, as attn's
  torch_context_model.py --model M --batch tokens.jsonl --pool mean -o vectors.npy

--batch reads JSON Lines with a "tokens" list each (the output of `attn embed --batch --format json`)
and prints one JSON line with the forward's time (tokenisation and loading excluded).
"""
import argparse
import json
import os
import struct
import sys
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
DEFAULT_MODEL = os.path.join(REPO, "data", "context-wikipedia.safetensors")
DEFAULT_VECTORS = os.path.join(REPO, "data", "glove-6b-100d-50k.attnvec")
# Tensors the encoder does not read: the masked-word (or classifier) head on top of it.
HEAD_PREFIXES = ("output.", "head.")


class ModelError(ValueError):
    """A model file the twin cannot reproduce exactly (the message says why)."""


def builtin_files(build_dir):
    """(model, default vectors) that `build_dir`'s attn embedded, from its CMakeCache.txt: the built-in
    model is whatever file the build named, not necessarily the one in data/ today."""
    found = {"ATTN_BUILTIN_MODEL": DEFAULT_MODEL, "ATTN_DEFAULT_VECTORS": DEFAULT_VECTORS}
    try:
        with open(os.path.join(build_dir, "CMakeCache.txt"), encoding="utf-8") as f:
            for line in f:
                name, _, value = line.strip().partition("=")
                key = name.split(":")[0]
                if key in found and value:
                    found[key] = value
    except OSError:
        pass
    return found["ATTN_BUILTIN_MODEL"], found["ATTN_DEFAULT_VECTORS"]


def read_safetensors(path):
    """(tensors as float32 arrays, metadata) of a safetensors file."""
    try:
        with open(path, "rb") as f:
            (n,) = struct.unpack("<Q", f.read(8))
            if n > os.path.getsize(path) - 8:  # not a header length: not a safetensors file
                raise ValueError(f"header length {n} exceeds the file")
            header = json.loads(f.read(n))
            data = f.read()
    except (OSError, struct.error, ValueError) as e:
        raise ModelError(f"not a readable safetensors file ({e})")
    meta = header.pop("__metadata__", {})
    tensors = {}
    for name, info in header.items():
        dtype = info.get("dtype")
        begin, end = info["data_offsets"]
        raw = data[begin:end]
        # attn widens F16 and BF16 to float32 as it loads (the built-in model's matrices are F16).
        if dtype == "F32":
            values = np.frombuffer(raw, dtype="<f4")
        elif dtype == "F16":
            values = np.frombuffer(raw, dtype="<f2").astype(np.float32)
        elif dtype == "BF16":
            values = (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
        else:
            raise ModelError(f"tensor '{name}' is {dtype}, expected F32, F16 or BF16")
        tensors[name] = values.reshape(info["shape"])
    return tensors, meta


def read_default_vectors(path):
    """(words, float32 rows) of the .attnvec attn embeds as its default vectors."""
    sys.path.insert(0, os.path.join(REPO, "tests"))
    try:
        from conftest import read_attnvec  # the tests' .attnvec reader (src/io/attnvec_format.hpp)
        words, values = read_attnvec(path)
    except (ImportError, OSError, AssertionError, struct.error, ValueError) as e:
        raise ModelError(f"the default vectors {path} do not read ({e})")
    return words, values.astype(np.float32)  # float16 or float32 on disk: exact either way


def input_table(config, tensors, meta, vectors_path):
    """(word → id, table [ids, embed_dim]) as attn's model input (text_model::decode): the table's
    words first, then the learned rows; a learned row replaces a default word's (word_index::add_row)."""
    new_words = json.loads(meta.get("new_words", "[]"))
    if config["embeddings"] == "default":
        words, rows = read_default_vectors(vectors_path)
    elif config["embeddings"] == "stored":
        words, rows = json.loads(meta["input_words"]), tensors["embedding.weight"]
    else:
        raise ModelError(f"embeddings '{config['embeddings']}' is neither default nor stored")
    if rows.shape[1] != config["embed_dim"]:
        raise ModelError(f"the input rows are {rows.shape[1]}-dimensional, the model expects {config['embed_dim']}")
    index = {}
    for i, w in enumerate(words):
        index.setdefault(w, i)
    if new_words:
        learned = tensors["embedding.new_words"]
        for k, w in enumerate(new_words):
            index[w] = len(words) + k
        rows = np.concatenate([rows, learned])
    return index, torch.from_numpy(np.ascontiguousarray(rows, dtype=np.float32))


class ContextEncoder(torch.nn.Module):
    """Embedding rows + learned positions → encoder layers (→ final LayerNorm for pre-norm)."""

    def __init__(self, table, config):
        super().__init__()
        e = config["dim"]
        self.embedding = torch.nn.Embedding.from_pretrained(table, freeze=True)
        positions = config.get("max_positions", 0)
        self.position = torch.nn.Parameter(torch.zeros(positions, e), requires_grad=False) if positions else None
        norm_first = bool(config.get("norm_first", False))
        self.layers = torch.nn.ModuleList(
            torch.nn.TransformerEncoderLayer(e, config["heads"], dim_feedforward=config["feedforward"],
                                             dropout=0.0, activation="relu", batch_first=True,
                                             norm_first=norm_first)
            for _ in range(config["layers"]))
        self.final_norm = torch.nn.LayerNorm(e) if norm_first else None

    def forward(self, ids, padding=None):
        """ids [B, L] (padding [B, L], True where there is no token) → rows [B, L, E]."""
        x = self.embedding(ids)
        if self.position is not None:
            x = x + self.position[:ids.shape[1]]
        for layer in self.layers:
            x = layer(x, src_key_padding_mask=padding)
        return self.final_norm(x) if self.final_norm is not None else x

    def sentence_vectors(self, ids, lengths):
        """The mean of each sentence's rows, [B, E]; ids [B, L] right-padded, lengths [B] ≥ 1."""
        if ids.shape[0] == 1:  # attn's case: one sentence at a time, no padding to mask
            return self(ids).mean(1)
        keep = torch.arange(ids.shape[1]).unsqueeze(0) < lengths.unsqueeze(1)
        rows = self(ids, padding=~keep)
        return (rows * keep.unsqueeze(-1)).sum(1) / lengths.unsqueeze(1)


def load_weights(model, tensors, config):
    """Copies attn's tensors into the twin, checking that every tensor is used (a tensor the twin
    skipped would make it compute something else)."""
    used = {"embedding.weight", "embedding.new_words"}

    def take(name, like):
        if name not in tensors:
            raise ModelError(f"missing tensor '{name}'")
        t = torch.from_numpy(np.array(tensors[name]))
        if tuple(t.shape) != tuple(like.shape):
            raise ModelError(f"tensor '{name}' has shape {list(t.shape)}, expected {list(like.shape)}")
        used.add(name)
        return t

    with torch.no_grad():
        if model.position is not None:
            model.position.copy_(take("position.weight", model.position))
        for i, layer in enumerate(model.layers):
            p, a = f"layers.{i}.", f"layers.{i}.attention."
            e = config["dim"]
            attention = layer.self_attn
            # PyTorch packs the three input projections as one [3E, E] matrix, rows q; k; v.
            attention.in_proj_weight.copy_(torch.cat([take(a + f"{x}_proj_weight", attention.in_proj_weight[:e]) for x in "qkv"]))
            attention.in_proj_bias.copy_(torch.cat([take(a + f"{x}_proj_bias", attention.in_proj_bias[:e]) for x in "qkv"]))
            attention.out_proj.weight.copy_(take(a + "out_proj.weight", attention.out_proj.weight))
            attention.out_proj.bias.copy_(take(a + "out_proj.bias", attention.out_proj.bias))
            for name in ("norm1", "norm2", "linear1", "linear2"):
                part = getattr(layer, name)
                part.weight.copy_(take(p + name + ".weight", part.weight))
                part.bias.copy_(take(p + name + ".bias", part.bias))
        if model.final_norm is not None:
            model.final_norm.weight.copy_(take("final_norm.weight", model.final_norm.weight))
            model.final_norm.bias.copy_(take("final_norm.bias", model.final_norm.bias))
    unused = sorted(n for n in tensors if n not in used and not n.startswith(HEAD_PREFIXES))
    if unused:
        raise ModelError(f"tensor(s) the twin does not model: {', '.join(unused)}")


def check_config(config, meta):
    """Refuses what this twin does not reproduce, rather than computing something else."""
    if meta.get("format") not in ("attn-text-model/1", "attn-text-model/2"):
        raise ModelError(f"not an attn text model (format '{meta.get('format')}')")
    task = config.get("task")
    if task in ("next-word", "lm"):
        raise ModelError(f"a {task} model: its attention is causal (and an lm reads <eos> first), not this twin's")
    if config.get("layers", 0) < 1:
        raise ModelError("the seeds' single attention layer (--layers 0) is not twinned: encoder layers only")
    if config.get("window", 0) > 0:
        raise ModelError("word windows (--window) are not twinned")
    if config["dim"] != config["embed_dim"]:
        raise ModelError(f"dim {config['dim']} differs from embed_dim {config['embed_dim']}")


def load(model_path, vectors_path=DEFAULT_VECTORS):
    """(ContextEncoder in eval mode with attn's weights, word → id, config) of an attn model file."""
    try:
        tensors, meta = read_safetensors(model_path)
        config = json.loads(meta["config"])
        check_config(config, meta)
        index, table = input_table(config, tensors, meta, vectors_path)
        model = ContextEncoder(table, config)
        load_weights(model, tensors, config)
    except (KeyError, json.JSONDecodeError) as e:
        raise ModelError(f"bad attn model metadata ({e})")
    return model.eval(), index, config


def token_ids(index, tokens):
    """attn's tokens → ids; every token must be one the model knows (attn leaves the others out)."""
    try:
        return [index[t] for t in tokens]
    except KeyError as e:
        raise ModelError(f"token {e} is not known to the model (give attn's tokens: it leaves unknown ones out)")


def embed_tokens(model, ids):
    """One sentence's rows [L, E] as a float32 array."""
    with torch.inference_mode():
        return model(torch.tensor([ids])).squeeze(0).numpy()


def sentence_vectors(model, id_lists, batch=1):
    """The mean-pooled vector of each id list, [N, E] (NaN rows for empty lists, as attn's npy);
    `batch` sentences per forward (1: one at a time, as `attn embed --batch`)."""
    out = np.full((len(id_lists), model.embedding.embedding_dim), np.nan, dtype=np.float32)
    todo = [k for k, ids in enumerate(id_lists) if ids]
    with torch.inference_mode():
        for s in range(0, len(todo), batch):
            group = todo[s:s + batch]
            lengths = torch.tensor([len(id_lists[k]) for k in group])
            ids = torch.zeros(len(group), int(lengths.max()), dtype=torch.long)
            for row, k in enumerate(group):
                ids[row, :len(id_lists[k])] = torch.tensor(id_lists[k])
            out[group] = model.sentence_vectors(ids, lengths).numpy()
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("tokens", nargs="*", help="one text's tokens, as attn gives them (lower case, known words)")
    p.add_argument("--model", default="builtin", help="an attn model file, or builtin (the one build/ embedded)")
    p.add_argument("--vectors", help="the default vectors' .attnvec (default: the one build/ embedded)")
    p.add_argument("--build", default=os.path.join(REPO, "build"), help="attn's build folder, for builtin")
    p.add_argument("--batch", help="JSON Lines with a 'tokens' list each (attn embed --batch --format json)")
    p.add_argument("--pool", choices=["mean"], help="--batch: one mean vector per line")
    p.add_argument("--twin-batch", type=int, default=1, help="--batch: sentences per forward (default 1)")
    p.add_argument("-o", "--output", help="--batch: the .npy of the vectors")
    p.add_argument("--threads", type=int, default=2)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    model_path, vectors_path = builtin_files(a.build) if a.model == "builtin" else (a.model, DEFAULT_VECTORS)
    vectors_path = a.vectors or vectors_path

    def fail(where, what):
        print(f"error: {where}: {what}", file=sys.stderr)
        sys.exit(2)

    if a.batch and (a.tokens or a.pool != "mean" or not a.output):
        fail("--batch", "give --pool mean and -o FILE.npy with it, and no tokens")
    try:
        model, index, config = load(model_path, vectors_path)
    except ModelError as e:
        fail(model_path, e)
    if not a.batch:
        try:
            rows = embed_tokens(model, token_ids(index, a.tokens))
        except ModelError as e:
            fail("tokens", e)
        print(json.dumps({"tokens": a.tokens, "embeddings": rows.tolist(), "model": a.model, "dim": config["dim"]}))
        return
    id_lists = []
    try:
        with open(a.batch, encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                try:
                    id_lists.append(token_ids(index, json.loads(line)["tokens"]))
                except (ValueError, KeyError, TypeError) as e:
                    fail(a.batch, f"line {number}: {e}")
    except OSError as e:
        fail(a.batch, e.strerror)
    start = time.perf_counter()
    vectors = sentence_vectors(model, id_lists, a.twin_batch)
    seconds = time.perf_counter() - start
    np.save(a.output, vectors)
    print(json.dumps({"peer": "pytorch-twin", "torch": torch.__version__, "threads": torch.get_num_threads(),
                      "sentences": len(id_lists), "seconds": seconds, "sentences_per_second": len(id_lists) / seconds}))


if __name__ == "__main__":
    main()
