#!/usr/bin/env python3
"""The PyTorch twin of attn's language model (--task lm), for bench/lm: the same network on the same
tokens, trained the same way, so speed and perplexity compare like with like.

Network (attn's defaults, read from an attn lm model file's config and vocabulary): embedding rows
(from the word vectors where a word has one, as attn starts them) + learned positions → dropout →
L × nn.TransformerEncoderLayer(norm_first=True, ReLU, no dropout inside, as attn's blocks) under a
causal mask → final LayerNorm → dropout → Linear(E, E) (attn's output transform) → logits against
the embedding rows themselves (tied) + a bias. Training: windows of T tokens cut from the stream
<eos> + each paragraph's tokens + <eos> (each epoch the stream starts at a paragraph drawn for it,
wrapping around, as attn's does), shuffled, batches of B, AdamW (decay 0.01 on matrices
only), linear warm-up over 5% then cosine decay over the wall-clock budget (as attn --time), gradient
clipping at 1. Evaluation: non-overlapping windows of T over the held-out stream, as attn eval.

Tokens come from `attn tokenize --model M --data FILE` (one paragraph a line, <unk> and <eos>
written), so both see exactly the same ids.

  torch_lm.py train --model attn.safetensors --train train.tokens --test held.tokens --seconds 300
  torch_lm.py generate --model attn.safetensors --words 510   # the cached loop, attn's weights

Prints one JSON line. Threads: --threads (default 2).
"""
import argparse
import json
import math
import random
import resource
import struct
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F


def read_model(path):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        data = f.read()
    meta = header.pop("__metadata__")
    tensors = {}
    for name, info in header.items():
        begin, end = info["data_offsets"]
        tensors[name] = torch.from_numpy(np.frombuffer(data[begin:end], dtype="<f4").reshape(info["shape"]).copy())
    return tensors, json.loads(meta["config"]), json.loads(meta["input_words"])


class TwinLM(torch.nn.Module):
    def __init__(self, vocab, e, heads, layers, ff, positions, dropout):
        super().__init__()
        self.embedding = torch.nn.Embedding(vocab, e)
        self.position = torch.nn.Parameter(torch.zeros(positions, e))
        self.layers = torch.nn.ModuleList(
            torch.nn.TransformerEncoderLayer(e, heads, dim_feedforward=ff, dropout=0.0, batch_first=True,
                                             norm_first=True) for _ in range(layers))
        self.final_norm = torch.nn.LayerNorm(e)
        self.transform = torch.nn.Linear(e, e)
        self.bias = torch.nn.Parameter(torch.zeros(vocab))
        self.drop = torch.nn.Dropout(dropout)

    def forward(self, ids):  # [B, L] → logits [B, L, V]
        length = ids.shape[1]
        x = self.drop(self.embedding(ids) + self.position[:length])
        mask = torch.triu(torch.full((length, length), float("-inf")), 1)
        for layer in self.layers:
            x = layer(x, src_mask=mask)
        h = self.transform(self.drop(self.final_norm(x)))
        return h @ self.embedding.weight.T + self.bias

    def load_attn(self, t):
        with torch.no_grad():
            self.embedding.weight.copy_(t["embedding.weight"])
            self.position.copy_(t["position.weight"])
            for i, layer in enumerate(self.layers):
                p, a = f"layers.{i}.", f"layers.{i}.attention."
                layer.self_attn.in_proj_weight.copy_(torch.cat([t[a + "q_proj_weight"], t[a + "k_proj_weight"], t[a + "v_proj_weight"]]))
                layer.self_attn.in_proj_bias.copy_(torch.cat([t[a + "q_proj_bias"], t[a + "k_proj_bias"], t[a + "v_proj_bias"]]))
                layer.self_attn.out_proj.weight.copy_(t[a + "out_proj.weight"])
                layer.self_attn.out_proj.bias.copy_(t[a + "out_proj.bias"])
                for name in ["norm1", "norm2", "linear1", "linear2"]:
                    getattr(layer, name).weight.copy_(t[p + name + ".weight"])
                    getattr(layer, name).bias.copy_(t[p + name + ".bias"])
            self.final_norm.weight.copy_(t["final_norm.weight"])
            self.final_norm.bias.copy_(t["final_norm.bias"])
            self.transform.weight.copy_(t["output.transform.weight"])
            self.transform.bias.copy_(t["output.transform.bias"])
            self.bias.copy_(t["output.bias"])


def make_twin(config, vocab_size):
    return TwinLM(vocab_size, config["dim"], config["heads"], config["layers"], config["feedforward"],
                  config["max_positions"], config["dropout"])


def read_stream(path, index):
    ids = [index["<eos>"]]
    with open(path, encoding="utf-8") as f:
        for line in f:
            ids += [index.get(w, index["<unk>"]) for w in line.split()]
    return torch.tensor(ids)


def paragraph_starts(stream, eos):
    """Where each paragraph of a stream (<eos> + paragraphs, each ending with <eos>) begins."""
    return (stream[:-1] == eos).nonzero().flatten() + 1


def starting_at(stream, start):
    """The stream with its paragraphs from the one at `start` on first, then those before it (as
    attn cuts each epoch: the windows fall elsewhere, and every paragraph still follows an <eos>)."""
    return torch.cat([stream[:1], stream[start:], stream[1:start]])


def windows(stream, t):
    return [stream[b:b + t + 1] for b in range(0, len(stream) - 1, t)]


def evaluate(model, stream, t, batch=16):
    model.eval()
    total, n = 0.0, 0
    with torch.no_grad():
        ws = windows(stream, t)
        for i in range(0, len(ws), batch):
            for w in ws[i:i + batch]:  # windows differ in length only at the end
                logits = model(w[:-1].unsqueeze(0))[0]
                total += F.cross_entropy(logits, w[1:], reduction="sum").item()
                n += len(w) - 1
    model.train()
    return total / n, n


def start_rows(model, words, vectors_path):
    """attn's initialisation of the rows: the word vectors' where a word has one, N(0, σ²) else."""
    if not vectors_path:
        return
    sys.path.insert(0, __file__.rsplit("/", 3)[0] + "/tests")
    from conftest import read_attnvec  # the tests' own .attnvec reader
    vw, vv = read_attnvec(vectors_path)
    index = {w: i for i, w in enumerate(vw)}
    rms = float(np.sqrt((vv ** 2).mean()))
    with torch.no_grad():
        for i, w in enumerate(words):
            if w in index:
                model.embedding.weight[i] = torch.from_numpy(vv[index[w]].astype(np.float32))
            else:
                model.embedding.weight[i].normal_(0.0, rms)


def train(a):
    t_, config, words = read_model(a.model)
    index = {w: i for i, w in enumerate(words)}
    torch.manual_seed(a.seed)
    model = make_twin(config, len(words))
    start_rows(model, words, a.vectors)
    if a.init:  # every weight from an attn model file (e.g. one taken after a single tiny step)
        model.load_attn(read_model(a.init)[0])
    train_stream, test_stream = read_stream(a.train, index), read_stream(a.test, index)
    t = config["max_positions"]
    decay = [p for n, p in model.named_parameters() if p.dim() == 2 and "embedding" not in n and n != "position"]
    rest = [p for n, p in model.named_parameters() if not (p.dim() == 2 and "embedding" not in n and n != "position")]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": rest, "weight_decay": 0.0}], lr=a.lr)
    starts = paragraph_starts(train_stream, index["<eos>"])
    rng = random.Random(a.seed)
    start = time.perf_counter()
    tokens = steps = 0
    done = False
    while not done:  # an epoch: the stream from a paragraph drawn for it, its windows shuffled
        ws = windows(starting_at(train_stream, int(starts[rng.randrange(len(starts))])), t)
        rng.shuffle(ws)
        for i in range(0, len(ws), a.batch):
            share = (time.perf_counter() - start) / a.seconds if not a.steps else steps / a.steps
            if share >= 1:
                done = True
                break
            lr = a.lr * (share / 0.05 if share < 0.05 else 0.5 * (1 + math.cos(math.pi * (share - 0.05) / 0.95)))
            for g in opt.param_groups:
                g["lr"] = lr
            group = ws[i:i + a.batch]
            length = max(len(w) for w in group)
            group = [w for w in group if len(w) == length] or group[:1]  # full windows together
            x = torch.stack([w[:-1] for w in group])
            y = torch.stack([w[1:] for w in group])
            loss = F.cross_entropy(model(x).reshape(-1, len(words)), y.reshape(-1))
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            tokens += y.numel()
            steps += 1
    seconds = time.perf_counter() - start
    loss, n = evaluate(model, test_stream, t)
    print(json.dumps({"peer": "pytorch-twin", "tokens": tokens, "steps": steps, "seconds": seconds,
                      "tokens_per_second": tokens / seconds, "test_loss": loss, "perplexity": math.exp(loss),
                      "test_tokens": n, "threads": torch.get_num_threads(),
                      "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


def adaptive_log_probabilities(scores, tokens, cuts):
    """attn's adaptive softmax (src/nn/adaptive_output.cpp) read back: the head holds the words
    before the first cut, those after the last and one token per cluster; a cluster's word has
    log p_head(its token) + log softmax over the cluster."""
    first, last = cuts[0], cuts[-1]
    head_lse = torch.logsumexp(torch.cat([scores[:first], scores[last:], tokens]), 0)
    out = scores - head_lse
    for k in range(len(cuts) - 1):
        s, e = cuts[k], cuts[k + 1]
        out[s:e] = tokens[k] - head_lse + torch.log_softmax(scores[s:e], 0)
    return out


def generate(a):
    """Greedy generation with the twin's own key-value cache (the layers' weights applied by hand
    to one new row, keys and values kept per layer), from attn's weights: the same words as
    attn generate --temperature 0 --ignore-eos on the same model."""
    t_, config, words = read_model(a.model)
    model = make_twin(config, len(words))
    model.load_attn(t_)
    model.eval()
    e, heads = config["dim"], config["heads"]
    d = e // heads
    index = {w: i for i, w in enumerate(words)}
    count = min(a.words, config["max_positions"])  # no cache restart here: the context at most
    keys = [[] for _ in model.layers]
    values = [[] for _ in model.layers]
    times, out = [], []
    token = index["<eos>"]
    with torch.no_grad():
        for pos in range(count):
            t0 = time.perf_counter()
            x = model.embedding.weight[token] + model.position[pos]
            for li, layer in enumerate(model.layers):
                h = layer.norm1(x)
                q, k, v = F.linear(h, layer.self_attn.in_proj_weight, layer.self_attn.in_proj_bias).split(e)
                keys[li].append(k.view(heads, d))
                values[li].append(v.view(heads, d))
                K = torch.stack(keys[li], 1)  # [H, t, D]
                V = torch.stack(values[li], 1)
                w = torch.softmax((K @ q.view(heads, d, 1)).squeeze(-1) / math.sqrt(d), -1)  # [H, t]
                o = (w.unsqueeze(1) @ V).reshape(e)
                x = x + layer.self_attn.out_proj(o)
                x = x + layer.linear2(F.relu(layer.linear1(layer.norm2(x))))
            hidden = model.transform(model.final_norm(x))
            logits = hidden @ model.embedding.weight.T + model.bias
            if "adaptive_cutoffs" in config:  # the same distribution attn's decoder reads
                tokens = hidden @ t_["output.clusters.weight"].T + t_["output.clusters.bias"]
                logits = adaptive_log_probabilities(logits, tokens, config["adaptive_cutoffs"])
            logits[index["<unk>"]] = float("-inf")
            logits[index["<eos>"]] = float("-inf")  # as attn generate --ignore-eos: 510 words
            token = int(torch.argmax(logits))
            times.append(time.perf_counter() - t0)
            out.append(words[token])
    print(json.dumps({"peer": "pytorch-twin", "words": len(out), "seconds": sum(times),
                      "words_per_second": len(out) / sum(times),
                      "ms_per_word_at": {str(p): 1000 * float(np.median(times[max(0, p - 5):p + 5])) for p in (10, 500) if p < len(times)},
                      "tokens": out, "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("mode", choices=["train", "generate"])
    p.add_argument("--model", required=True, help="an attn lm model file: its config, vocabulary (and weights, to generate)")
    p.add_argument("--train")
    p.add_argument("--test")
    p.add_argument("--vectors", help="the .attnvec the rows start from (attn's default: data/glove-6b-100d-50k.attnvec)")
    p.add_argument("--init", help="train: start from this attn lm model file's weights")
    p.add_argument("--seconds", type=float, default=300)
    p.add_argument("--steps", type=int, default=0, help="train: a budget of steps instead of seconds (the schedule follows it)")
    p.add_argument("--lr", type=float, default=0.003)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--words", type=int, default=510)
    p.add_argument("--threads", type=int, default=2)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    train(a) if a.mode == "train" else generate(a)


if __name__ == "__main__":
    main()
