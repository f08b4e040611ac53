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
  torch_lm.py train ... --device cuda --dtype bf16              # on a GPU (bench/gpu/train_lm_vs_torch.py)

Prints one JSON line. Threads: --threads (default 2).

With --device (cuda, or cpu to try the same path), train takes another loop: the stream and the
model on the device, the blocks written with F.scaled_dot_product_attention(is_causal=True) (the
fused kernels; nn.TransformerEncoderLayer under a float mask does not reach flash attention), bf16
autocast with float32 master weights for --dtype bf16, the windows of full length cut by one
gather a step, tokens/s timed between synchronisations after --warmup-steps, MFU by attn's estimate
(src/train/loop.cpp step_flops) against --peak-tflops, and the allocator's peak memory. Without
--device the CPU loop above runs unchanged.
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


def causal_attention(q, k, v):
    """softmax(q·kᵀ/√d + causal mask)·v over [B, H, T, D]: PyTorch's fused kernels where it has
    them (2.0 on), the same math spelled out where it does not (the CPU tests' PyTorch 1.13)."""
    if hasattr(F, "scaled_dot_product_attention"):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
    t = q.shape[-2]
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    scores = scores.masked_fill(torch.ones(t, t, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    return torch.softmax(scores, -1) @ v


class CausalSelfAttention(torch.nn.Module):
    """nn.MultiheadAttention's parameters (names, shapes, initialisation), applied through sdpa."""
    def __init__(self, e, heads):
        super().__init__()
        self.heads = heads
        self.in_proj_weight = torch.nn.Parameter(torch.empty(3 * e, e))
        self.in_proj_bias = torch.nn.Parameter(torch.zeros(3 * e))
        self.out_proj = torch.nn.Linear(e, e)
        torch.nn.init.xavier_uniform_(self.in_proj_weight)
        torch.nn.init.zeros_(self.out_proj.bias)

    def forward(self, x):  # [B, T, E]
        b, t, e = x.shape
        q, k, v = F.linear(x, self.in_proj_weight, self.in_proj_bias).view(b, t, 3, self.heads, e // self.heads).permute(2, 0, 3, 1, 4)
        return self.out_proj(causal_attention(q, k, v).transpose(1, 2).reshape(b, t, e))


class SdpaBlock(torch.nn.Module):
    """nn.TransformerEncoderLayer(norm_first=True, ReLU, dropout 0) under a causal mask, the same
    parameters by the same names, with the attention through causal_attention."""
    def __init__(self, e, heads, ff):
        super().__init__()
        self.self_attn = CausalSelfAttention(e, heads)
        self.linear1, self.linear2 = torch.nn.Linear(e, ff), torch.nn.Linear(ff, e)
        self.norm1, self.norm2 = torch.nn.LayerNorm(e), torch.nn.LayerNorm(e)

    def forward(self, x):
        x = x + self.self_attn(self.norm1(x))
        return x + self.linear2(F.relu(self.linear1(self.norm2(x))))


class TwinLM(torch.nn.Module):
    def __init__(self, vocab, e, heads, layers, ff, positions, dropout, sdpa=False):
        super().__init__()
        self.sdpa = sdpa
        self.embedding = torch.nn.Embedding(vocab, e)
        self.position = torch.nn.Parameter(torch.zeros(positions, e))
        self.layers = torch.nn.ModuleList(
            SdpaBlock(e, heads, ff) if sdpa else
            torch.nn.TransformerEncoderLayer(e, heads, dim_feedforward=ff, dropout=0.0, batch_first=True,
                                             norm_first=True) for _ in range(layers))
        self.final_norm = torch.nn.LayerNorm(e)
        self.transform = torch.nn.Linear(e, e)
        self.bias = torch.nn.Parameter(torch.zeros(vocab))
        self.drop = torch.nn.Dropout(dropout)

    def forward(self, ids):  # [B, L] → logits [B, L, V]
        length = ids.shape[1]
        x = self.drop(self.embedding(ids) + self.position[:length])
        if self.sdpa:
            for layer in self.layers:
                x = layer(x)
            return self.transform(self.drop(self.final_norm(x))) @ self.embedding.weight.T + self.bias
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


def make_twin(config, vocab_size, sdpa=False):
    return TwinLM(vocab_size, config["dim"], config["heads"], config["layers"], config["feedforward"],
                  config["max_positions"], config["dropout"], sdpa)


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


def read_ids(path, index):
    """read_stream's ids as one int64 array, mapped a line at a time (a GPU run reads tens of
    millions of tokens)."""
    unk, eos = index["<unk>"], index["<eos>"]
    parts = [np.array([eos], dtype=np.int64)]
    with open(path, encoding="utf-8") as f:
        for line in f:
            words = line.split()
            if words:
                parts.append(np.fromiter((index.get(w, unk) for w in words), dtype=np.int64, count=len(words)))
    return torch.from_numpy(np.concatenate(parts))


def flops_per_token(model, config, vocab_size):
    """attn's estimate (src/train/loop.cpp step_flops) for one predicted token of a full window:
    6 per dense weight (the embedding rows and positions are lookups, not counted), 6·V·E for the
    tied output's products, 12·L·E·T for attention's scores and weighted sums, forward and backward."""
    dense = sum(p.numel() for n, p in model.named_parameters() if n not in ("embedding.weight", "position"))
    return (6.0 * dense + 6.0 * vocab_size * config["dim"]
            + 12.0 * max(config["layers"], 1) * config["dim"] * config["max_positions"])


def evaluate_on_device(model, stream, t, device, autocast, batch=32):
    """evaluate()'s sum over the non-overlapping windows, full ones batched on the device."""
    model.eval()
    total, n = 0.0, 0
    ends = list(range(0, len(stream) - 1, t))
    full = [b for b in ends if b + t + 1 <= len(stream)]
    rest = [b for b in ends if b + t + 1 > len(stream)]
    offsets = torch.arange(t + 1, device=device)
    with torch.no_grad(), autocast():
        for i in range(0, len(full), batch):
            w = stream[torch.tensor(full[i:i + batch], device=device)[:, None] + offsets]
            logits = model(w[:, :-1]).float()
            total += F.cross_entropy(logits.reshape(-1, logits.shape[-1]), w[:, 1:].reshape(-1), reduction="sum").item()
            n += w[:, 1:].numel()
        for b in rest:
            w = stream[b:]
            logits = model(w[:-1].unsqueeze(0))[0].float()
            total += F.cross_entropy(logits, w[1:], reduction="sum").item()
            n += len(w) - 1
    model.train()
    return total / n, n


def train_on_device(a):
    """train()'s model, optimiser and schedule on --device: see the module's note."""
    device = torch.device(a.device)
    cuda = device.type == "cuda"
    bf16 = a.dtype == "bf16"
    t_, config, words = read_model(a.model)
    index = {w: i for i, w in enumerate(words)}
    torch.manual_seed(a.seed)
    model = make_twin(config, len(words), sdpa=True)
    start_rows(model, words, a.vectors)
    if a.init:
        model.load_attn(read_model(a.init)[0])
    model.to(device)
    train_stream, test_stream = read_ids(a.train, index).to(device), read_ids(a.test, index).to(device)
    t = config["max_positions"]
    if len(train_stream) < t + 1:
        sys.exit(f"error: {a.train}: {len(train_stream)} tokens, fewer than one window of {t + 1}")
    decay = [p for n, p in model.named_parameters() if p.dim() == 2 and "embedding" not in n and n != "position"]
    rest = [p for n, p in model.named_parameters() if not (p.dim() == 2 and "embedding" not in n and n != "position")]
    fused = {"fused": True} if cuda and "fused" in torch.optim.AdamW.__init__.__code__.co_varnames else {}
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": rest, "weight_decay": 0.0}], lr=a.lr, **fused)
    autocast = (lambda: torch.autocast(device.type, dtype=torch.bfloat16)) if bf16 else (lambda: torch.autocast(device.type, enabled=False))
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    if cuda:
        torch.cuda.reset_peak_memory_stats(device)
    # Each epoch the windows' starts, from a paragraph drawn for it, shuffled; full windows only.
    starts = paragraph_starts(train_stream, index["<eos>"]).cpu().numpy()
    rng = np.random.default_rng(a.seed)
    count = (len(train_stream) - 1) // t
    offsets = torch.arange(t + 1, device=device)
    steps = tokens = 0
    warm_tokens, warm_time = 0, None
    loss = None
    sync()
    start = time.perf_counter()
    done = False
    while not done:
        first = int(starts[rng.integers(len(starts))]) if len(starts) else 1
        stream = starting_at(train_stream, first)
        order = torch.from_numpy(rng.permutation(count) * t).to(device)
        for i in range(0, count - a.batch + 1 if count >= a.batch else 1, a.batch):
            now = time.perf_counter()
            share = (now - start) / a.seconds if not a.steps else steps / a.steps
            if share >= 1:
                done = True
                break
            if steps == a.warmup_steps:  # the rate is timed from here: compiled kernels, warm allocator
                sync()
                warm_time, warm_tokens = time.perf_counter(), tokens
            lr = a.lr * (share / 0.05 if share < 0.05 else 0.5 * (1 + math.cos(math.pi * (share - 0.05) / 0.95)))
            for g in opt.param_groups:
                g["lr"] = lr
            w = stream[order[i:i + a.batch, None] + offsets]
            x, y = w[:, :-1], w[:, 1:]
            with autocast():
                logits = model(x)
            loss = F.cross_entropy(logits.float().reshape(-1, len(words)), y.reshape(-1))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            tokens += y.numel()
            steps += 1
    sync()
    end = time.perf_counter()
    seconds = end - start
    peak_memory = torch.cuda.max_memory_allocated(device) / 2**20 if cuda else None
    timed = warm_time is not None and end > warm_time
    rate = (tokens - warm_tokens) / (end - warm_time) if timed else tokens / seconds
    fpt = flops_per_token(model, config, len(words))
    test_loss, n = evaluate_on_device(model, test_stream, t, device, autocast)
    print(json.dumps({"peer": "pytorch-twin", "device": torch.cuda.get_device_name(device) if cuda else "cpu",
                      "torch": torch.__version__, "dtype": a.dtype, "optimizer": "AdamW" + (" (fused)" if fused else ""), "attention": "sdpa" if hasattr(F, "scaled_dot_product_attention") else "math",
                      "tokens": tokens, "steps": steps, "seconds": seconds, "warmup_steps": a.warmup_steps,
                      "tokens_per_second": rate, "tokens_per_second_whole_budget": tokens / seconds,
                      "rate_after_warmup": timed, "flops_per_token": fpt, "peak_tflops": a.peak_tflops,
                      "mfu": fpt * rate / (a.peak_tflops * 1e12), "last_loss": loss.item() if loss is not None else None,
                      "test_loss": test_loss, "perplexity": math.exp(test_loss), "test_tokens": n,
                      "batch": a.batch, "context": t, "parameters": sum(p.numel() for p in model.parameters()),
                      "peak_memory_mb": peak_memory, "threads": torch.get_num_threads(),
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
    p.add_argument("--device", help="train on this device (cuda, or cpu to try the path): see the note above")
    p.add_argument("--dtype", choices=["float32", "bf16"], default="float32",
                   help="with --device: bf16 trains under autocast (float32 master weights)")
    p.add_argument("--peak-tflops", type=float, default=989.4,
                   help="with --device: the MFU's denominator (default: the H100 SXM's bf16 dense peak)")
    p.add_argument("--warmup-steps", type=int, default=5, help="with --device: steps before the rate is timed")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    if a.mode == "train" and a.device:
        train_on_device(a)
    else:
        train(a) if a.mode == "train" else generate(a)


if __name__ == "__main__":
    main()
