#!/usr/bin/env python3
"""PyTorch (Debian's python3-torch) twin of attn's masked-word training step, as a peer for training
speed: frozen word vectors (+ one learned mask row) -> dropout -> L x nn.TransformerEncoderLayer (post-norm,
ReLU) -> the masked positions -> Linear -> scores against the frozen vectors of the output words (tied,
not learned) + a learned bias -> cross-entropy; AdamW (weight decay 0.01), gradients clipped to norm 1.

usage: torch_masked_word.py --data CORPUS.txt [--steps 200] [--threads T] ... (--help lists the rest)
CORPUS: plain text; headings (lines starting with '=') and `<unk>` skipped; lowercased, split on whitespace
and punctuation, then into sentences at . ! ? and windows of at most --max-length tokens; words without a
vector dropped (vectors: attn's embedded default through attn's Python module, so both sides see the same
ones). Outputs: the --outputs most frequent corpus words. Masking (BERT's): each output word chosen with
probability --mask (at least one per sequence), then 80% -> mask row, 10% -> random word, 10% kept.
Prints one JSON line: tokens (real, unpadded) and masked tokens per second over the timed steps; loss_first
is the very first step's loss (warm-up included), loss_last the last one's.
"""
import argparse, collections, json, os, random, re, sys, time

p = argparse.ArgumentParser()
p.add_argument("--data", required=True)
p.add_argument("--vectors-from", default="build/python")
p.add_argument("--steps", type=int, default=200)
p.add_argument("--warmup-steps", type=int, default=10)
p.add_argument("--batch", type=int, default=32)
p.add_argument("--max-length", type=int, default=64)
p.add_argument("--outputs", type=int, default=30000)
p.add_argument("--mask", type=float, default=0.15)
p.add_argument("--layers", type=int, default=2)
p.add_argument("--heads", type=int, default=4)
p.add_argument("--feedforward", type=int, default=200)
p.add_argument("--dropout", type=float, default=0.1)
p.add_argument("--lr", type=float, default=1e-3)
p.add_argument("--threads", type=int, default=os.cpu_count())
p.add_argument("--seed", type=int, default=0)
a = p.parse_args()
if a.steps < 1:
    p.error("--steps must be at least 1")
if not os.path.isfile(a.data):  # checked before the slow imports, so the error comes at once
    print(f"error: {a.data}: no such file", file=sys.stderr)
    sys.exit(2)

# bench/measure.py installs OpenBLAS if it is missing and names the kernels the CPU allows
# (OPENBLAS_CORETYPE): OpenBLAS 0.3.21 takes some virtual Xeons for a Prescott, 4x slower.
here = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [here, os.path.dirname(here)]
from measure import ensure_openblas  # noqa: E402

ensure_openblas()
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

torch.set_num_threads(a.threads)
torch.manual_seed(a.seed)
rng = random.Random(a.seed)
sys.path.insert(0, a.vectors_from)
import attn  # noqa: E402

vectors = attn.Vectors.load()
token_re = re.compile(r"[a-z0-9'-]+|[^\sa-z0-9]")


def windows(sentence):
    """Cut at --max-length first, then drop words without a vector (windows are cut on raw tokens)."""
    for s in range(0, len(sentence), a.max_length):
        words = [w for w in sentence[s:s + a.max_length] if w in vectors]
        if len(words) >= 2:
            yield words


def sequences(path):
    """Token lists, one per sentence window; a line's unterminated tail is a sentence too."""
    for line in open(path, encoding="utf-8"):
        line = line.strip()
        if not line or line.startswith("="):
            continue
        sentence = []
        for t in token_re.findall(line.lower().replace("<unk>", " ")):
            sentence.append(t)
            if t in (".", "!", "?"):  # the end token stays with its sentence
                yield from windows(sentence)
                sentence = []
        yield from windows(sentence)


corpus = list(sequences(a.data))
if not corpus:
    print(f"error: {a.data}: no sequence of 2+ words with vectors", file=sys.stderr)
    sys.exit(2)
counts = collections.Counter(w for s in corpus for w in s)
# Input ids: 0 padding, 1..N the corpus words most frequent first, N+1 the mask token. Because the
# order is by frequency, output index = input id - 1 for ids 1..V, so E_out is a slice of the table.
vocab = [w for w, _ in counts.most_common()]
word_id = {w: i + 1 for i, w in enumerate(vocab)}
N, V, MASK = len(vocab), min(a.outputs, len(vocab)), len(vocab) + 1
table = torch.zeros(N + 1, vectors.dim)
for w, i in word_id.items():
    table[i] = torch.from_numpy(vectors[w])
ids_of = [torch.tensor([word_id[w] for w in s]) for s in corpus]  # converted once, outside the timing
print(f"{a.data}: {len(corpus)} sequences, {sum(map(len, corpus))} tokens, {N} words, {V} outputs",
      file=sys.stderr, flush=True)


class MaskedWordModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        d = vectors.dim
        self.embedding = torch.nn.Embedding.from_pretrained(table, freeze=True, padding_idx=0)
        self.mask_row = torch.nn.Parameter(torch.randn(d) * table[1:].pow(2).mean().sqrt())
        self.positions = torch.nn.Parameter(torch.zeros(a.max_length, d))  # learned, as attn's
        self.dropout = torch.nn.Dropout(a.dropout)
        self.layers = torch.nn.ModuleList(torch.nn.TransformerEncoderLayer(
            d, a.heads, a.feedforward, a.dropout, activation="relu", batch_first=True, norm_first=False)
            for _ in range(a.layers))
        self.project = torch.nn.Linear(d, d)
        self.bias = torch.nn.Parameter(torch.zeros(V))

    def forward(self, ids, selected):
        """ids [B,L] (0 padding, MASK the mask token), selected [B,L] bool -> logits [R,V]."""
        pad = ids == 0
        # Look the mask token up as padding, then swap in the learned row: no per-step table copy.
        is_mask = ids == MASK
        e = torch.where(is_mask.unsqueeze(-1), self.mask_row, self.embedding(ids.masked_fill(is_mask, 0)))
        x = self.dropout(e + self.positions[:ids.shape[1]])
        for layer in self.layers:
            x = layer(x, src_key_padding_mask=pad)
        h = self.project(x[selected])  # [R,d]
        return h @ self.embedding.weight[1:V + 1].t() + self.bias  # tied, frozen output vectors


def make_batch(rows):
    """Padded ids with BERT-style corruption, the selected positions, and their targets."""
    ids = torch.nn.utils.rnn.pad_sequence([ids_of[r] for r in rows], batch_first=True)
    candidate = (ids >= 1) & (ids <= V)  # only output words can be predicted
    selected = candidate & (torch.rand(ids.shape) < a.mask)
    # At least one per sequence: where none was drawn, take the candidate with the smallest random score.
    forced = torch.rand(ids.shape).masked_fill(~candidate, 2.0).argmin(1)
    need = candidate.any(1) & ~selected.any(1)
    selected[need, forced[need]] = True
    targets = ids[selected] - 1
    roll = torch.rand(ids.shape)
    corrupted = ids.clone()
    corrupted[selected & (roll < 0.8)] = MASK
    swap = selected & (roll >= 0.8) & (roll < 0.9)
    corrupted[swap] = torch.randint(1, N + 1, (int(swap.sum()),))
    return corrupted, selected, targets


model = MaskedWordModel()
params = [q for q in model.parameters() if q.requires_grad]
opt = torch.optim.AdamW(params, lr=a.lr, weight_decay=0.01)
order, cursor = list(range(len(corpus))), len(corpus)
tokens = masked = 0
losses = []
model.train()
for step in range(a.warmup_steps + a.steps):
    if step == a.warmup_steps:
        print(f"warm-up done ({a.warmup_steps} steps), timing {a.steps}", file=sys.stderr, flush=True)
        t0, tokens, masked = time.perf_counter(), 0, 0
    if cursor + a.batch > len(order):  # a new pass in a new random order (a short last batch is skipped)
        rng.shuffle(order)
        cursor = 0
    rows = order[cursor:cursor + a.batch]
    cursor += a.batch
    ids, selected, targets = make_batch(rows)
    loss = F.cross_entropy(model(ids, selected), targets)
    opt.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(params, 1.0)
    opt.step()
    losses.append(loss.item())
    tokens += sum(len(ids_of[r]) for r in rows)
    masked += len(targets)
dt = time.perf_counter() - t0
print(json.dumps({"peer": "pytorch", "torch": torch.__version__, "threads": torch.get_num_threads(),
                  "steps": a.steps, "tokens": tokens, "seconds": dt, "tokens_per_second": tokens / dt,
                  "masked_per_second": masked / dt, "loss_first": losses[0], "loss_last": losses[-1]}))
