"""Malformed input, class by class (issue #7): every file in tests/malformed/ gives exit code 2,
exactly one line `error: <file>: <what>, <where>`, and no output file (a new one is not created,
an existing one is left as it was). The files are written by tests/malformed/make_corpus.py.

`where` is a byte offset, a line, a record or the tensor at fault; it is left out when the problem
is the file or the array as a whole (an empty file, a missing tensor, a wrong rank)."""
import os

import numpy as np
import pytest

CORPUS = os.path.join(os.path.dirname(__file__), "..", "malformed")

SAFETENSORS = {
    "short": "file is 5 bytes, too short for the 8-byte header length, byte 0",
    "header_past_end": "header length 4096 runs past the end of the file (16 bytes), byte 0",
    "header_length_2_64": "header length 18446744073709551608 is over the 100 MB limit, byte 0",
    "header_not_utf8": "header is not valid UTF-8, byte 11",
    "header_not_json": "header is not valid JSON: parse error at line 1, column 23: syntax error "
                       "while parsing object key - unexpected '}'; expected string literal, byte 30",
    "header_not_object": "header does not start with '{', byte 8",
    "header_number_overflow": "header is not valid JSON: number 1e400 is out of range, byte 41",
    "duplicate_names": "duplicate tensor name 'a', tensor 'a'",
    "unknown_dtype": "unknown dtype 'F33', tensor 'a'",
    "unsupported_dtype": "dtype I64 not supported, expected F32, F16 or BF16, tensor 'a'",
    "negative_shape": "'shape' must be an array of non-negative integers, got [-2], tensor 'a'",
    "overflowing_shape": "shape [4294967296,4294967296] has too many elements, tensor 'a'",
    "zero_dim_overflowing_shape": "shape [0,4294967296,4294967296] has too many elements, tensor 'a'",
    "size_not_shape": "shape [3] of dtype F32 needs 12 bytes but data_offsets [8, 16] hold 8, tensor 'b'",
    "begin_after_end": "data_offsets begin 16 is after end 8, tensor 'b'",
    "offsets_beyond_data": "data_offsets [4096, 4104] run past the end of the data buffer (16 bytes), "
                           "tensor 'b'",
    "overlapping": "data_offsets [4, 12] overlap the previous tensor, which ends at 8, tensor 'b'",
    "hole": "data_offsets [12, 20] leave a hole after the previous tensor, which ends at 8, tensor 'b'",
    "truncated_data": "data_offsets [304, 320] run past the end of the data buffer (316 bytes), "
                      "tensor 'out_proj.bias'",
    "trailing_data": "the tensors cover 8 bytes of data but the data buffer holds 12, byte 80",
    # The file is sound; the layer loading it is not what it holds.
    "missing_tensor": "tensor 'in_proj_bias' is present but 'out_proj.bias' is missing "
                      "(biases are all or none)",
    "wrong_shape": "tensor 'out_proj.weight' has shape [4, 5], expected [4, 4]",
}

NPY = {
    "bad_magic": "not a .npy file (bad magic, expected \\x93NUMPY), byte 0",
    "truncated_preamble": "truncated .npy preamble (no header length), byte 8",
    "truncated_header": "truncated .npy header: 118 bytes declared, 30 present, byte 10",
    "header_length_2_32": "truncated .npy header: 4294967295 bytes declared, 2 present, byte 12",
    "header_not_dict": "bad .npy header: expected the header to be a dict starting with '{', header",
    "unsupported_dtype": "unsupported dtype '<f8': only float32 ('<f4', little-endian) and bool "
                         "('|b1') are supported, header",
    "big_endian": "unsupported dtype '>f4': only float32 ('<f4', little-endian) and bool ('|b1') "
                  "are supported, header",
    "fortran_order": "Fortran-order arrays are not supported; save with C order, header",
    "shape_larger_than_data": "data is 32 bytes but shape [1, 1, 4, 4] needs 64 (file truncated), "
                              "byte 128",
    "overflowing_shape": "shape [4294967296, 4294967296, 4] has too many elements, header",
    "zero_dim_overflowing_shape": "shape [0, 4294967296, 4294967296] has too many elements, header",
    # A sound file of the wrong rank for `attn sdpa`.
    "wrong_rank": "the query must have rank 4 ([B, H, L, D] / [B, Hkv, S, D]), got [2, 4]",
}

WORD_VECTORS = {
    "empty.txt": "empty file",
    "ragged.txt": "ragged row: expected 3 values, got 2, line 2",
    "not_a_number.txt": "value 'abc' is not a number, line 2",
    "nan.txt": "value 'nan' is not a finite number, line 2",
    "overflow.txt": "value '1e39' is not a finite number, line 2",
    "header_count_lies.vec": "truncated: header says 5 words, found 2, line 3",
    "header_count_short.vec": "more words than the header says (1), line 3",
    "header_overflow.vec": "header word count '99999999999999999999' is too large, line 1",
    "header_product_overflow.vec": "header says 4611686018427387904 words × 4611686018427387904 "
                                   "dimensions: too many values, line 1",
    "truncated.bin": "truncated: the record needs 12 bytes of values, 6 are left, record 2, byte 28",
    "binary_count_lies.bin": "truncated: header says 3 words, found 2, record 3, byte 41",
    "invalid_utf8.txt": "invalid UTF-8 in word, line 2",
    "invalid_utf8.bin": "invalid UTF-8 in word, record 2, byte 23",
    "bad_magic.attnvec": "not an .attnvec file (bad magic; expected \"ATTNVEC1\"), byte 0",
    "truncated_header.attnvec": "truncated: the header needs 64 bytes, the file has 40",
    "count_overflow.attnvec": "count × dim overflows (4611686018427387904 × 4611686018427387904), "
                              "byte 16",
    "word_table_past_end.attnvec": "word table (1099511627776 bytes at 64) runs past the end of the "
                                   "file (152 bytes), byte 40",
    "truncated_values.attnvec": "truncated: 2 × 3 values need 24 bytes from byte 128, the file has "
                                "148, byte 48",
}


def corpus_file(fmt, name):
    return os.path.abspath(os.path.join(CORPUS, fmt, name))


def test_every_corpus_file_has_its_expected_error():
    # A file added to the corpus without an expectation here would go untested.
    listed = {("safetensors", f"{n}.safetensors") for n in SAFETENSORS}
    listed |= {("npy", f"{n}.npy") for n in NPY}
    listed |= {("attnvec" if n.endswith(".attnvec") else "word_vectors", n) for n in WORD_VECTORS}
    listed |= {("word_vectors", n) for n in ("accept_bom_crlf.txt", "accept_duplicate.txt")}
    present = {(fmt, n) for fmt in ("safetensors", "npy", "word_vectors", "attnvec")
               for n in os.listdir(os.path.join(CORPUS, fmt))}
    assert present == listed


def check_rejected(r, path, message, outputs):
    assert r.code == 2, r.err
    assert r.err.splitlines() == [f"error: {path}: {message}"]
    for out, before in outputs:
        if before is None:
            assert not out.exists(), f"{out} was created"
        else:
            assert out.read_bytes() == before, f"{out} was changed"


@pytest.fixture(params=["new", "existing"])
def output(request, tmp_path):
    """An output path that does not exist yet, or one holding an earlier result."""
    def make(name):
        out = tmp_path / name
        if request.param == "existing":
            out.write_bytes(b"an earlier result\n")
            return out, out.read_bytes()
        return out, None
    return make


@pytest.mark.parametrize("name", sorted(SAFETENSORS))
def test_malformed_safetensors(attn, tmp_path, output, name):
    query = tmp_path / "x.npy"
    np.save(query, np.zeros((1, 3, 4), dtype=np.float32))
    out, before = output("y.npy")
    path = corpus_file("safetensors", f"{name}.safetensors")
    r = attn("mha", "--weights", path, "--heads", 2, "--query", query, "-o", out)
    check_rejected(r, path, SAFETENSORS[name], [(out, before)])


def test_the_corpus_base_safetensors_loads(attn, tmp_path):
    # The files above are damaged copies of this one: it must load, so each error is the damage.
    query = tmp_path / "x.npy"
    np.save(query, np.zeros((1, 3, 4), dtype=np.float32))
    base = os.path.join(CORPUS, "..", "..", "fuzz", "seeds", "safetensors", "mha.safetensors")
    r = attn("mha", "--weights", base, "--heads", 2, "--query", query, "-o", tmp_path / "y.npy")
    assert r.code == 0, r.err


@pytest.mark.parametrize("name", sorted(NPY))
def test_malformed_npy(attn, tmp_path, output, name):
    kv = tmp_path / "kv.npy"
    np.save(kv, np.zeros((1, 1, 2, 4), dtype=np.float32))
    out, before = output("o.npy")
    weights, weights_before = output("w.npy")
    path = corpus_file("npy", f"{name}.npy")
    r = attn("sdpa", "--query", path, "--key", kv, "--value", kv, "-o", out,
             "--attn-weights-out", weights)
    check_rejected(r, path, NPY[name], [(out, before), (weights, weights_before)])


@pytest.mark.parametrize("name", sorted(WORD_VECTORS))
def test_malformed_word_vectors(attn, output, name):
    out, before = output("c.txt")
    path = corpus_file("attnvec" if name.endswith(".attnvec") else "word_vectors", name)
    r = attn("embed", "--vectors", path, "-o", out, "river bank")
    check_rejected(r, path, WORD_VECTORS[name], [(out, before)])


@pytest.mark.parametrize("name", sorted(WORD_VECTORS))
def test_malformed_word_vectors_convert(attn, output, name):
    out, before = output("v.attnvec")
    path = corpus_file("attnvec" if name.endswith(".attnvec") else "word_vectors", name)
    r = attn("vectors", "convert", path, out)
    check_rejected(r, path, WORD_VECTORS[name], [(out, before)])


def test_bom_and_crlf_are_accepted(attn):
    path = corpus_file("word_vectors", "accept_bom_crlf.txt")
    r = attn("embed", "--vectors", path, "--format", "json", "river bank")
    assert r.code == 0 and r.err == "", r.err
    plain = attn("vectors", "info", path)
    assert plain.code == 0, plain.err
    assert "river" in plain.out and "\ufeff" not in plain.out and "\r" not in plain.out


def test_duplicate_words_keep_the_first_with_a_warning(attn):
    path = corpus_file("word_vectors", "accept_duplicate.txt")
    r = attn("embed", "--vectors", path, "--scale", "none", "--format", "csv", "river")
    assert r.code == 0, r.err
    assert r.err.splitlines() == [f"warning: {path}: duplicate word 'river' at line 3 kept the first"]
    # One token attends only to itself: C is its vector, the first one in the file.
    assert r.out.splitlines()[1] == "river,0.1,0.2,0.3"
