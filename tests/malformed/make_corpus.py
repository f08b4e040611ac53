#!/usr/bin/env python3
"""Writes the malformed-input corpus (tests/malformed/<format>/) and the fuzzers' valid seeds
(fuzz/seeds/<target>/). Deterministic, standard library only; the files are committed, so run it
only after changing a case: python3 tests/malformed/make_corpus.py

Each malformed file is one class of damage from issue #7; tests/cli/test_malformed.py holds the
exact error line each must give, and tests/unit/test_fuzz_regressions.cpp replays every file
under the sanitizers."""
import json
import os
import shutil
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SEEDS = os.path.join(ROOT, "fuzz", "seeds")


def write(directory, name, data):
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def f32(values):
    return b"".join(struct.pack("<f", v) for v in values)


# ---- safetensors ----
E = 4  # model width of the mha layer the files are loaded as (2 heads of 2)


def mha_tensors():
    """nn.MultiheadAttention(4, 2)'s state dict, with simple values."""
    return {
        "in_proj_weight": ([3 * E, E], [0.01 * i for i in range(3 * E * E)]),
        "in_proj_bias": ([3 * E], [0.0] * (3 * E)),
        "out_proj.weight": ([E, E], [0.1 * i for i in range(E * E)]),
        "out_proj.bias": ([E], [0.0] * E),
    }


def safetensors(header, data, pad=True):
    text = header if isinstance(header, bytes) else json.dumps(header).encode()
    if pad:
        text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


def chained(tensors):
    """A well-formed header and data buffer for {name: (shape, values)}."""
    header, data = {}, b""
    for name, (shape, values) in tensors.items():
        blob = f32(values)
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [len(data), len(data) + len(blob)]}
        data += blob
    return header, data


def safetensors_cases():
    good_header, good_data = chained(mha_tensors())
    good = safetensors(good_header, good_data)
    small = {"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}
    two = {"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
           "b": {"dtype": "F32", "shape": [2], "data_offsets": [8, 16]}}

    def with_entry(name, **changes):
        h = json.loads(json.dumps(two))
        h[name].update(changes)
        return h

    missing = dict(mha_tensors())
    del missing["out_proj.bias"]
    wrong = dict(mha_tensors())
    wrong["out_proj.weight"] = ([E, E + 1], [0.0] * (E * (E + 1)))
    return {
        "short.safetensors": b"\x10\x00\x00\x00\x00",
        "header_past_end.safetensors": struct.pack("<Q", 4096) + b'{"a": 1}',
        "header_length_2_64.safetensors": struct.pack("<Q", 2**64 - 8) + b"{}      ",
        "header_not_utf8.safetensors": safetensors(b'{"a\xff": {}}', b""),
        "header_not_json.safetensors": safetensors(b'{"a": {"dtype": "F32",}', b""),
        "header_not_object.safetensors": safetensors(b'[1, 2, 3]', b""),
        # Found by fuzz_safetensors: a number beyond double escaped as a non-attn exception.
        "header_number_overflow.safetensors": safetensors(
            b'{"a": {"dtype": "F32", "shape": [1e400], "data_offsets": [0, 4]}}', f32([0])),
        "duplicate_names.safetensors": safetensors(
            b'{"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}, '
            b'"a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}', f32([1, 2])),
        "unknown_dtype.safetensors": safetensors(with_entry("a", dtype="F33"), f32([0] * 4)),
        "unsupported_dtype.safetensors": safetensors(with_entry("a", dtype="I64", shape=[1]), f32([0] * 4)),
        "negative_shape.safetensors": safetensors(with_entry("a", shape=[-2]), f32([0] * 4)),
        "overflowing_shape.safetensors": safetensors(
            with_entry("a", shape=[2**32, 2**32], data_offsets=[0, 8]), f32([0] * 4)),
        # Found by fuzz_npy: a 0 hides the overflow from the element count, not from the strides.
        "zero_dim_overflowing_shape.safetensors": safetensors(
            with_entry("a", shape=[0, 2**32, 2**32], data_offsets=[0, 0]), f32([0] * 4)),
        "size_not_shape.safetensors": safetensors(with_entry("b", shape=[3]), f32([0] * 4)),
        "begin_after_end.safetensors": safetensors(with_entry("b", data_offsets=[16, 8]), f32([0] * 4)),
        "offsets_beyond_data.safetensors": safetensors(
            with_entry("b", data_offsets=[4096, 4104]), f32([0] * 4)),
        "overlapping.safetensors": safetensors(with_entry("b", data_offsets=[4, 12]), f32([0] * 4)),
        "hole.safetensors": safetensors(with_entry("b", data_offsets=[12, 20]), f32([0] * 5)),
        "truncated_data.safetensors": good[:-4],
        "trailing_data.safetensors": safetensors(small, f32([0] * 3)),
        "missing_tensor.safetensors": safetensors(*chained(missing)),
        "wrong_shape.safetensors": safetensors(*chained(wrong)),
    }, {"mha.safetensors": good, "two.safetensors": safetensors(two, f32([1, 2, 3, 4])),
        "rank0_empty.safetensors": safetensors(
            {"s": {"dtype": "F16", "shape": [], "data_offsets": [0, 2]},
             "z": {"dtype": "BF16", "shape": [0, 3], "data_offsets": [2, 2]},
             "__metadata__": {"format": "pt"}}, b"\x00\x3c")}


# ---- .npy ----
def npy(header, data, version=(1, 0)):
    text = header.encode()
    preamble = 10 if version[0] == 1 else 12
    text += b" " * (-(preamble + len(text) + 1) % 64) + b"\n"
    length = struct.pack("<H", len(text)) if version[0] == 1 else struct.pack("<I", len(text))
    return b"\x93NUMPY" + bytes(version) + length + text + data


def npy_cases():
    def h(descr="<f4", fortran="False", shape="(1, 1, 2, 4)"):
        return f"{{'descr': '{descr}', 'fortran_order': {fortran}, 'shape': {shape}, }}"
    data = f32([0.5] * 8)
    good = npy(h(), data)
    return {
        "bad_magic.npy": b"\x93NUMPZ\x01\x00" + good[8:],
        "truncated_preamble.npy": good[:9],
        "truncated_header.npy": good[:40],
        "header_length_2_32.npy": b"\x93NUMPY\x02\x00" + struct.pack("<I", 2**32 - 1) + b"{}",
        "header_not_dict.npy": npy("['<f4', False, (2,)]", data),
        "unsupported_dtype.npy": npy(h(descr="<f8"), data + data),
        "big_endian.npy": npy(h(descr=">f4"), data),
        "fortran_order.npy": npy(h(fortran="True"), data),
        "shape_larger_than_data.npy": npy(h(shape="(1, 1, 4, 4)"), data),
        "overflowing_shape.npy": npy(h(shape="(4294967296, 4294967296, 4)"), data),
        "zero_dim_overflowing_shape.npy": npy(h(shape="(0, 4294967296, 4294967296)"), b""),
        "wrong_rank.npy": npy(h(shape="(2, 4)"), data),
    }, {"q.npy": good, "bool.npy": npy("{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }", b"\x01\x00\x01"),
        "v2.npy": npy(h(shape="()"), f32([1.0]), version=(2, 0))}


# ---- word vectors ----
def word_vector_cases():
    w2v_bin = b"2 3\nriver " + f32([0.1, 0.2, 0.3]) + b"\nbank " + f32([0.4, 0.5, 0.6]) + b"\n"
    return {
        "empty.txt": b"",
        "ragged.txt": b"river 0.1 0.2 0.3\nbank 0.4 0.5\n",
        "not_a_number.txt": b"river 0.1 0.2 0.3\nbank 0.4 abc 0.6\n",
        "nan.txt": b"river 0.1 0.2 0.3\nbank 0.4 nan 0.6\n",
        "overflow.txt": b"river 0.1 0.2 0.3\nbank 0.4 1e39 0.6\n",
        "header_count_lies.vec": b"5 3\nriver 0.1 0.2 0.3\nbank 0.4 0.5 0.6\n",
        "header_count_short.vec": b"1 3\nriver 0.1 0.2 0.3\nbank 0.4 0.5 0.6\n",
        "header_overflow.vec": b"99999999999999999999 3\nriver 0.1 0.2 0.3\n",
        "header_product_overflow.vec": b"4611686018427387904 4611686018427387904\nriver 0.1 0.2\n",
        "truncated.bin": w2v_bin[:-7],
        "binary_count_lies.bin": b"3" + w2v_bin[1:],
        "invalid_utf8.txt": b"river 0.1 0.2 0.3\nb\xe4nk 0.4 0.5 0.6\n",
        "invalid_utf8.bin": w2v_bin.replace(b"bank", b"b\xffnk"),
        # Accepted, not errors: a BOM with CRLF line ends, and a repeated word (the first kept).
        "accept_bom_crlf.txt": b"\xef\xbb\xbfriver 0.1 0.2 0.3\r\nbank 0.4 0.5 0.6\r\n",
        "accept_duplicate.txt": b"river 0.1 0.2 0.3\nbank 0.4 0.5 0.6\nriver 9 9 9\n",
    }, {"glove.txt": b"river 0.1 0.2 0.3\nbank 0.4 0.5 0.6\nthe -1e-3 2.5e1 +3\n",
        "word2vec.vec": b"2 3\nriver 0.1 0.2 0.3 \nbank 0.4 0.5 0.6 \n",
        "word2vec.bin": w2v_bin}


# ---- .attnvec ----
def attnvec(count, dim, words, values, dtype=1, words_offset=64, words_bytes=None, vectors_offset=None):
    table = b"".join(w + b"\n" for w in words)
    words_bytes = len(table) if words_bytes is None else words_bytes
    if vectors_offset is None:
        vectors_offset = (64 + len(table) + 63) // 64 * 64
    head = b"ATTNVEC1" + struct.pack("<IIQQQQQQ", 1, dtype, count, dim, words_offset, words_bytes,
                                     vectors_offset, 0)
    body = table + b"\x00" * (vectors_offset - 64 - len(table))
    return head + body + values


def attnvec_cases():
    values = f32([0.1, 0.2, 0.3, 0.4, 0.5, 0.6])
    good = attnvec(2, 3, [b"river", b"bank"], values)
    return {
        "bad_magic.attnvec": b"ATTNVEC2" + good[8:],
        "truncated_header.attnvec": good[:40],
        "count_overflow.attnvec": attnvec(2**62, 2**62, [b"river", b"bank"], values),
        "word_table_past_end.attnvec": attnvec(2, 3, [b"river", b"bank"], values, words_bytes=2**40),
        "truncated_values.attnvec": good[:-4],
    }, {"two.attnvec": good}


def main():
    groups = {
        "safetensors": safetensors_cases(),
        "npy": npy_cases(),
        "word_vectors": word_vector_cases(),
        "attnvec": attnvec_cases(),
    }
    for fmt, (bad, seeds) in groups.items():
        directory = os.path.join(HERE, fmt)
        shutil.rmtree(directory, ignore_errors=True)
        for name, data in bad.items():
            write(directory, name, data)
        seed_dir = os.path.join(SEEDS, fmt)
        shutil.rmtree(seed_dir, ignore_errors=True)
        for name, data in seeds.items():
            write(seed_dir, name, data)
    # word2vec binary: its fuzz target writes the "count dim" header itself, so its seeds are the
    # records alone, after two bytes that choose count 2 (1 % 16 + 1) and dim 3 (2 % 32 + 1).
    records = word_vector_cases()[1]["word2vec.bin"].split(b"\n", 1)[1]
    write(os.path.join(SEEDS, "word2vec_binary"), "two_records", bytes([1, 2]) + records)
    # The round trip target reads its choices from the bytes; any few bytes are a seed.
    write(os.path.join(SEEDS, "roundtrip"), "small", bytes(range(64)))
    write(os.path.join(SEEDS, "tokenizer"), "english",
          "He didn't cross the street — it’s 3.14, u.s. “quoted” well-known... (o'neill) £5 \u00a0x\n")


if __name__ == "__main__":
    main()
