#!/usr/bin/env python3
"""The PyTorch twin of attn's translator (--task translate), for bench/translate: the same network
on the same pieces and batches, trained the same way, so speed and BLEU compare like with like.

Network (read from an attn translation model file's config): one embedding table N(0, 1/E) shared
by source, target and output; embedding·√E + Vaswani's sinusoids → dropout → nn.Transformer(
norm_first=True, ReLU, no dropout inside, as attn's layers; its final LayerNorms) with the source's
key padding and a causal target mask → logits against the embedding rows (tied, no bias) →
cross-entropy with label smoothing over the real target positions. Xavier-uniform matrices (as
nn.Transformer starts them). Training: attn's batches (pairs sorted by target then source length,
cut where pairs × (longest source + longest target + 1) would pass --batch-tokens, the batches
shuffled each epoch), AdamW (decay 0.01 on the layers' matrices, none on the embedding, biases or
norms), linear warm-up over 5% of the wall-clock budget then cosine decay over it (attn --time),
gradient clipping at 1.

Pieces come from `attn tokenize --model M --ids --data FILE` (one sentence a line), so both read the
same ids; `attn tokenize --model M --vocabulary` gives the table that turns ids back into text.

Decoding: its own loops with caches — the encoder once per sentence, each decoder layer's
cross-attention keys and values projected once, its self-attention keys and values kept and
extended a token at a time; greedy at --beam 1, beam search with hypotheses ranked by
log-probability / length^α (α 1, as attn), finished ones leaving the beam.

  torch_translator.py train --model attn.safetensors --train-source s.ids --train-target t.ids \\
      --valid-source vs.ids --vocabulary pieces.txt --seconds 600 --out hyps.txt

  torch_translator.py speed --model attn.safetensors --sources s.ids --vocabulary pieces.txt --out hyps.txt

(`speed`: attn's trained weights in the twin, its decoding loops timed on them; bench/translate/speed.py.)
Prints one JSON line. Threads: --threads (default 2).
"""
import argparse
import json
import math
import random
import resource
import struct
import time

import torch
import torch.nn.functional as F
from torch import nn

PAD, UNK, BOS, EOS = 0, 1, 2, 3


def read_config(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
    return json.loads(header["__metadata__"]["config"])


def read_ids(path):
    with open(path, encoding="utf-8") as f:
        return [[int(x) for x in line.split()] for line in f.read().split("\n")[:-1]]


def attention(q, k, v):
    """softmax(q·kᵀ/√D)·v ([N, H, L, D]; torch 1.13 has no scaled_dot_product_attention)."""
    return torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]), -1) @ v


def sinusoids(length, width):
    t = torch.arange(length, dtype=torch.float64)[:, None]
    j = torch.arange(width)
    angle = t / torch.pow(10000.0, (j - j % 2).double() / width)
    return torch.where(j % 2 == 0, torch.sin(angle), torch.cos(angle)).float()


class Twin(nn.Module):
    def __init__(self, c, dropout):
        super().__init__()
        e = c["width"]
        self.width = e
        self.embedding = nn.Embedding(c["vocabulary"], e)
        self.transformer = nn.Transformer(d_model=e, nhead=c["heads"], num_encoder_layers=c["encoder_layers"],
                                          num_decoder_layers=c["decoder_layers"], dim_feedforward=c["feedforward"],
                                          dropout=0.0, activation="relu", batch_first=True, norm_first=True)
        nn.init.normal_(self.embedding.weight, 0.0, 1.0 / math.sqrt(e))
        self.drop = nn.Dropout(dropout)
        self.register_buffer("positions", sinusoids(1024, e), persistent=False)

    def embed(self, ids, start=0):
        return self.drop(self.embedding(ids) * math.sqrt(self.width) + self.positions[start:start + ids.shape[1]])

    def encode(self, source, source_pad):
        return self.transformer.encoder(self.embed(source), src_key_padding_mask=source_pad)

    def forward(self, source, source_pad, target_in, target_pad):
        memory = self.encode(source, source_pad)
        causal = torch.triu(torch.full((target_in.shape[1],) * 2, float("-inf")), diagonal=1)
        y = self.transformer.decoder(self.embed(target_in), memory, tgt_mask=causal, tgt_key_padding_mask=target_pad,
                                     memory_key_padding_mask=source_pad)
        return y @ self.embedding.weight.t()


def length_batches(pairs, max_tokens, rng):
    order = sorted(range(len(pairs)), key=lambda i: (len(pairs[i][1]), len(pairs[i][0])))
    batches, batch, ls, lt = [], [], 0, 0
    for i in order:
        s, t = len(pairs[i][0]), len(pairs[i][1])
        if batch and (len(batch) + 1) * (max(ls, s) + max(lt, t) + 1) > max_tokens:
            batches.append(batch)
            batch, ls, lt = [], 0, 0
        batch.append(i)
        ls, lt = max(ls, s), max(lt, t)
    if batch:
        batches.append(batch)
    rng.shuffle(batches)
    return batches


def make_batch(pairs, indices):
    """Sources padded with <pad> (masked), targets read as <s> y and predicted as y </s> (−100: none)."""
    b = len(indices)
    ls = max(len(pairs[i][0]) for i in indices)
    lt = max(len(pairs[i][1]) for i in indices)
    source = torch.full((b, ls), PAD, dtype=torch.long)
    target_in = torch.full((b, lt), PAD, dtype=torch.long)
    target_out = torch.full((b, lt), -100, dtype=torch.long)
    for k, i in enumerate(indices):
        s, t = pairs[i]
        source[k, :len(s)] = torch.tensor(s)
        target_in[k, 0] = BOS
        target_in[k, 1:len(t)] = torch.tensor(t[:-1])
        target_out[k, :len(t)] = torch.tensor(t)
    return source, source == PAD, target_in, target_out == -100, target_out


def flops_per_step(c, source_tokens, target_tokens, pairs):
    """attn's estimate (src/train/translation_training.cpp step_flops)."""
    e, f = c["width"], c["feedforward"]
    enc, dec = 4 * e * e + 2 * e * f, 8 * e * e + 2 * e * f
    flops = 6.0 * (c["encoder_layers"] * enc * source_tokens + c["decoder_layers"] * dec * target_tokens)
    flops += 6.0 * c["vocabulary"] * e * target_tokens
    flops += 12.0 * e * (c["encoder_layers"] * source_tokens * (source_tokens / pairs) +
                         c["decoder_layers"] * target_tokens * (target_tokens / pairs + source_tokens / pairs))
    return flops


class CachedDecoder:
    """The decoder a token at a time for a beam of hypotheses of one sentence, with caches."""

    def __init__(self, model, memory):
        self.m, self.layers = model, model.transformer.decoder.layers
        self.heads = self.layers[0].self_attn.num_heads
        e = model.width
        self.cross = []
        for layer in self.layers:
            w, b = layer.multihead_attn.in_proj_weight, layer.multihead_attn.in_proj_bias
            k = F.linear(memory, w[e:2 * e], b[e:2 * e])
            v = F.linear(memory, w[2 * e:], b[2 * e:])
            self.cross.append((self.split(k), self.split(v)))
        self.keys = [None] * len(self.layers)
        self.values = [None] * len(self.layers)
        self.length = 0

    def split(self, x):  # [N, L, E] → [N, H, L, D]
        n, l, e = x.shape
        return x.view(n, l, self.heads, e // self.heads).transpose(1, 2)

    def merge(self, x):
        n, h, l, d = x.shape
        return x.transpose(1, 2).reshape(n, l, h * d)

    def reorder(self, index):
        self.keys = [k[index] for k in self.keys]
        self.values = [v[index] for v in self.values]

    def step(self, tokens):  # tokens [N] → logits [N, V]
        e = self.m.width
        x = self.m.embed(tokens[:, None], self.length)
        for i, layer in enumerate(self.layers):
            h = layer.norm1(x)
            q, k, v = F.linear(h, layer.self_attn.in_proj_weight, layer.self_attn.in_proj_bias).split(e, dim=-1)
            k, v = self.split(k), self.split(v)
            self.keys[i] = k if self.keys[i] is None else torch.cat([self.keys[i], k], 2)
            self.values[i] = v if self.values[i] is None else torch.cat([self.values[i], v], 2)
            a = attention(self.split(q), self.keys[i], self.values[i])
            x = x + layer.self_attn.out_proj(self.merge(a))
            h = layer.norm2(x)
            w, b = layer.multihead_attn.in_proj_weight, layer.multihead_attn.in_proj_bias
            q = self.split(F.linear(h, w[:e], b[:e]))
            ck, cv = self.cross[i]
            a = attention(q, ck, cv)
            x = x + layer.multihead_attn.out_proj(self.merge(a))
            x = x + layer.linear2(F.relu(layer.linear1(layer.norm3(x))))
        self.length += 1
        y = self.m.transformer.decoder.norm(x)[:, 0]
        return y @ self.m.embedding.weight.t()


@torch.no_grad()
def translate(model, source, beam, alpha=1.0):
    """Best hypothesis of one source (ids ending in </s>); <pad> and <unk> never chosen."""
    src = torch.tensor(source)[None]
    memory = model.encode(src, src == PAD)
    decoder = CachedDecoder(model, memory)
    max_tokens = 2 * (len(source) - 1) + 10
    live = [([], 0.0)]
    tokens = torch.tensor([BOS])
    finished = []
    for step in range(max_tokens):
        logp = torch.log_softmax(decoder.step(tokens).double(), -1)
        logp[:, PAD] = logp[:, UNK] = -math.inf
        logp = torch.log_softmax(logp, -1)  # renormalised over the allowed tokens, as attn's search
        if beam == 1:
            nxt = int(logp[0].argmax())
            if nxt == EOS:
                return live[0][0]
            live = [(live[0][0] + [nxt], 0.0)]
            tokens = torch.tensor([nxt])
            continue
        scores = torch.tensor([s for _, s in live], dtype=torch.float64)[:, None] + logp
        flat = scores.view(-1)
        top = torch.topk(flat, min(2 * beam, flat.numel()))
        v = logp.shape[1]
        new_live, rows, nexts = [], [], []
        for score, index in zip(top.values.tolist(), top.indices.tolist()):
            row, token = divmod(index, v)
            if token == EOS:
                words = live[row][0]
                finished.append((score / (len(words) + 1) ** alpha, words))
            elif len(new_live) < beam:
                new_live.append((live[row][0] + [token], score))
                rows.append(row)
                nexts.append(token)
            if len(new_live) == beam and len(finished) >= beam:
                break
        if not new_live:
            break
        # Stop when no live hypothesis can still beat the best finished one (its score only falls).
        if len(finished) >= beam:
            best = max(f[0] for f in finished)
            bound = max(s / (len(w) + 1 + (max_tokens - step - 1)) ** alpha if alpha > 0 else s / (len(w) + 1) ** alpha
                        for w, s in new_live)
            if bound <= best:
                break
        live = new_live
        decoder.reorder(torch.tensor(rows))
        tokens = torch.tensor(nexts)
    for words, s in live:
        finished.append((s / max(1, len(words)) ** alpha, words))
    return max(finished, key=lambda f: f[0])[1]


def detokenize(ids, table):
    return "".join(table[i] for i in ids).replace("\u2581", " ").strip()


def read_tensors(path):
    """An attn translation model's float32 tensors by name (safetensors: a little-endian length, the
    JSON header, the bytes)."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        if t["dtype"] != "F32":
            raise SystemExit(f"error: {path}: tensor {name} is {t['dtype']}, not F32")
        begin, end = t["data_offsets"]
        out[name] = torch.frombuffer(bytearray(data[begin:end]), dtype=torch.float32).reshape(t["shape"])
    return out


@torch.no_grad()
def load_attn_weights(model, path):
    """attn's weights into the twin: the same names as nn.Transformer's, less its packed in_proj
    (attn stores q, k and v apart) and with the encoder's self-attention named `attention`."""
    t = read_tensors(path)
    model.embedding.weight.copy_(t.pop("embedding.weight"))
    tr = model.transformer

    def attention(prefix, module):
        module.in_proj_weight.copy_(torch.cat([t.pop(prefix + f"{k}_proj_weight") for k in "qkv"]))
        module.in_proj_bias.copy_(torch.cat([t.pop(prefix + f"{k}_proj_bias") for k in "qkv"]))
        module.out_proj.weight.copy_(t.pop(prefix + "out_proj.weight"))
        module.out_proj.bias.copy_(t.pop(prefix + "out_proj.bias"))

    for i, layer in enumerate(tr.encoder.layers):
        attention(f"encoder.layers.{i}.attention.", layer.self_attn)
    for i, layer in enumerate(tr.decoder.layers):
        attention(f"decoder.layers.{i}.self_attn.", layer.self_attn)
        attention(f"decoder.layers.{i}.multihead_attn.", layer.multihead_attn)
    for name in list(t):  # linear1/2, norm1/2/3 and the final norms: nn.Transformer's own names
        param = tr.get_parameter(name)
        param.copy_(t.pop(name))


def speed_main():
    """torch_translator.py speed --model M --sources ids --vocabulary pieces.txt: the twin with attn's
    weights translates the first --sentences sources (with pieces) at beam 1 and --beam, on 1 and 2
    threads, each --rounds times; one JSON line with every round's sentences/s and target tokens/s
    (tokens made + </s>), and the translations at --beam on --threads-out threads to --out."""
    p = argparse.ArgumentParser()
    p.add_argument("command", choices=["speed"])
    p.add_argument("--model", required=True)
    p.add_argument("--sources", required=True)
    p.add_argument("--vocabulary", required=True)
    p.add_argument("--sentences", type=int, default=100)
    p.add_argument("--beam", type=int, default=5)
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--out", required=True)
    a = p.parse_args()
    c = read_config(a.model)
    model = Twin(c, 0.0)
    load_attn_weights(model, a.model)
    model.eval()
    table = open(a.vocabulary, encoding="utf-8").read().split("\n")[:-1]
    subset = [s + [EOS] for s in read_ids(a.sources) if s][:a.sentences]
    speed = {}
    for _ in range(a.rounds):
        for threads in (1, 2):
            torch.set_num_threads(threads)
            for beam in (1, a.beam):
                t0 = time.perf_counter()
                made = [translate(model, s, beam) for s in subset]
                seconds = time.perf_counter() - t0
                speed.setdefault(f"beam{beam}_threads{threads}", []).append(
                    {"sentences_per_second": len(subset) / seconds,
                     "target_tokens_per_second": sum(len(m) + 1 for m in made) / seconds})
                if beam == a.beam and threads == 1:
                    with open(a.out, "w", encoding="utf-8") as out:
                        out.writelines(detokenize(m, table) + "\n" for m in made)
    print(json.dumps({"sentences": len(subset), "speed": speed, "torch": torch.__version__,
                      "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


def main():
    import sys
    if len(sys.argv) > 1 and sys.argv[1] == "speed":
        return speed_main()
    p = argparse.ArgumentParser()
    p.add_argument("command", choices=["train"])
    p.add_argument("--model", required=True, help="an attn translation model file (its shape)")
    p.add_argument("--train-source", required=True)
    p.add_argument("--train-target", required=True)
    p.add_argument("--valid-source", required=True)
    p.add_argument("--vocabulary", required=True, help="attn tokenize --model M --vocabulary")
    p.add_argument("--seconds", type=float, default=600)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--batch-tokens", type=int, default=4096)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--dropout", type=float, default=0.1)
    p.add_argument("--label-smoothing", type=float, default=0.1)
    p.add_argument("--max-length", type=int, default=128)
    p.add_argument("--beam", type=int, default=5)
    p.add_argument("--speed-sentences", type=int, default=200, help="sentences timed at each beam and thread count")
    p.add_argument("--peak-gflops", type=float, default=0, help="the FMA peak measured in the same run, for MFU")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--dtype", choices=["float32", "bf16"], default="float32",
                   help="bf16: each step's forward under torch.autocast('cpu', torch.bfloat16), as attn --dtype bf16")
    p.add_argument("--out", required=True, help="the valid sources' translations at --beam")
    p.add_argument("--curve-every", type=float, default=0,
                   help="every this many training seconds also write greedy translations of the valid sources to "
                        "OUT.at{seconds}s (the clock stopped meanwhile), for the learning curve")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    rng = random.Random(a.seed)
    c = read_config(a.model)
    table = open(a.vocabulary, encoding="utf-8").read().split("\n")[:-1]
    pairs = [(s + [EOS], t + [EOS]) for s, t in zip(read_ids(a.train_source), read_ids(a.train_target))
             if s and t and max(len(s), len(t)) + 1 <= a.max_length]
    model = Twin(c, a.dropout)
    decay = [p for n, p in model.named_parameters() if p.dim() > 1 and not n.startswith("embedding")]
    rest = [p for n, p in model.named_parameters() if not (p.dim() > 1 and not n.startswith("embedding"))]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": rest, "weight_decay": 0.0}],
                            lr=a.lr, betas=(0.9, 0.999), eps=1e-8)
    start = time.perf_counter()
    paused = 0.0  # seconds spent on the curve's translations, not on training
    next_curve = a.curve_every
    valid = [s + [EOS] for s in read_ids(a.valid_source)]
    steps = tokens = epochs = 0
    flops = 0.0
    loss_sum = rows_sum = 0.0
    done = False
    while not done:
        epochs += 1
        for indices in length_batches(pairs, a.batch_tokens, rng):
            elapsed = time.perf_counter() - start - paused
            if a.curve_every > 0 and elapsed >= next_curve:
                t0 = time.perf_counter()
                model.eval()
                with open(f"{a.out}.at{int(round(next_curve))}s", "w", encoding="utf-8") as out:
                    for s in valid:
                        out.write((detokenize(translate(model, s, 1), table) if len(s) > 1 else "") + "\n")
                model.train()
                next_curve += a.curve_every
                paused += time.perf_counter() - t0
            if elapsed >= a.seconds:
                done = True
                break
            share = elapsed / a.seconds
            lr = a.lr * (share / 0.05 if share < 0.05 else 0.5 * (1 + math.cos(math.pi * (share - 0.05) / 0.95)))
            for g in opt.param_groups:
                g["lr"] = lr
            source, source_pad, target_in, target_pad, target_out = make_batch(pairs, indices)
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.dtype == "bf16"):
                logits = model(source, source_pad, target_in, target_pad)
            real = target_out >= 0
            loss = F.cross_entropy(logits[real].float(), target_out[real], label_smoothing=a.label_smoothing)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            steps += 1
            t = int(real.sum())
            s = int((~source_pad).sum())
            tokens += s + t
            flops += flops_per_step(c, s, t, len(indices))
            loss_sum += float(loss) * t
            rows_sum += t
    trained = time.perf_counter() - start - paused
    model.eval()
    t0 = time.perf_counter()
    with open(a.out, "w", encoding="utf-8") as out:
        for s in valid:
            out.write((detokenize(translate(model, s, a.beam), table) if len(s) > 1 else "") + "\n")
    translate_seconds = time.perf_counter() - t0
    speed = {}
    subset = [s for s in valid if len(s) > 1][:a.speed_sentences]
    for threads in (1, 2):
        torch.set_num_threads(threads)
        for beam in (1, a.beam):
            t0 = time.perf_counter()
            made = sum(len(translate(model, s, beam)) + 1 for s in subset)
            seconds = time.perf_counter() - t0
            speed[f"beam{beam}_threads{threads}"] = {"sentences_per_second": len(subset) / seconds,
                                                     "target_tokens_per_second": made / seconds}
    print(json.dumps({"steps": steps, "epochs": epochs, "tokens": tokens, "seconds": trained,
                      "tokens_per_second": tokens / trained, "train_loss": loss_sum / max(rows_sum, 1),
                      "mfu": flops / trained / (a.peak_gflops * 1e9) if a.peak_gflops > 0 else None,
                      "pairs": len(pairs), "translate_seconds": translate_seconds, "speed": speed,
                      "threads": a.threads, "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


if __name__ == "__main__":
    main()
