"""Official .bin reader/writer: byte-identical round trip and clear errors for bad files."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

from sentvec.exceptions import ModelFormatError, QuantizedModelError
from sentvec.sent2vec.binfile import FASTTEXT_MAGIC, is_bin_file, read_bin, write_bin

REF = Path(__file__).parents[1] / "data" / "sent2vec-reference"
MODELS = ["tiny-bigram", "tiny-unigram", "tiny-maxvocab"]
# README table: (dim, wordNgrams, bucket, vocabulary)
EXPECTED = {
    "tiny-bigram": (16, 2, 20000, 11935),
    "tiny-unigram": (12, 1, 1000, 11935),
    "tiny-maxvocab": (8, 2, 5000, 800),
}
ARGS_END = 4 * 14 + 8  # signature (2 int32) + 12 int32 + float64 t
DICT_END = ARGS_END + 28


@pytest.mark.parametrize("name", MODELS)
def test_read_then_write_is_byte_identical(name, tmp_path):
    src = REF / f"{name}.bin"
    m = read_bin(src)
    dim, ngrams, bucket, nwords = EXPECTED[name]
    assert (m.args["dim"], m.args["wordNgrams"], m.args["bucket"]) == (dim, ngrams, bucket)
    assert m.args["model"] == "sent2vec" and m.args["loss"] == "ns" and m.args["t"] == 1e-4
    assert m.dictionary.nwords == nwords
    assert m.input_matrix.shape == (nwords + bucket + 1, dim)
    assert m.output_matrix.shape == (nwords, dim)
    assert m.input_matrix.dtype == np.float32
    out = tmp_path / "copy.bin"
    write_bin(
        out,
        args=m.args,
        dictionary=m.dictionary,
        input_matrix=m.input_matrix,
        output_matrix=m.output_matrix,
    )
    assert out.read_bytes() == src.read_bytes()
    assert is_bin_file(out) and not is_bin_file(REF / "sentences.txt")


def test_matrix_values_match_raw_bytes():
    raw = (REF / "tiny-maxvocab.bin").read_bytes()
    m = read_bin(REF / "tiny-maxvocab.bin")
    n_out = m.output_matrix.size * 4
    tail = np.frombuffer(raw[len(raw) - n_out :], dtype="<f4").reshape(m.output_matrix.shape)
    np.testing.assert_array_equal(tail, m.output_matrix)


def _bad(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


@pytest.fixture(scope="module")
def model_bytes() -> bytes:
    return (REF / "tiny-maxvocab.bin").read_bytes()


def test_truncated_everywhere(model_bytes, tmp_path):
    n = len(model_bytes)
    cuts = [
        0,
        3,
        7,
        8,
        30,
        ARGS_END - 1,
        ARGS_END,
        DICT_END - 1,
        DICT_END,
        DICT_END + 5,
        DICT_END + 3000,
        n // 3,
        n // 2,
        n - 4 * 8 * 800 - 17,
        n - 4 * 8 * 800 - 1,
        n - 100,
        n - 1,
    ]
    for cut in cuts:
        p = _bad(tmp_path / f"cut{cut}.bin", model_bytes[:cut])
        with pytest.raises(ModelFormatError) as err:
            read_bin(p)
        msg = str(err.value)
        assert "cut" in msg  # names the file
        assert "truncated" in msg or "empty" in msg or "too short" in msg, (cut, msg)


def test_trailing_bytes(model_bytes, tmp_path):
    with pytest.raises(ModelFormatError, match="trailing"):
        read_bin(_bad(tmp_path / "t.bin", model_bytes + b"\x00"))


@pytest.mark.parametrize(
    "data,match",
    [
        (b"", "empty"),
        (b"the quick brown fox jumps over the lazy dog\n" * 20, "text file"),
        (np.random.default_rng(3).bytes(5000), "magic"),
        (struct.pack("<ii", FASTTEXT_MAGIC, 12) + bytes(200), "version 12"),
    ],
)
def test_foreign_files(data, match, tmp_path):
    with pytest.raises(ModelFormatError, match=match):
        read_bin(_bad(tmp_path / "x.bin", data))


def _patched(data: bytes, offset: int, fmt: str, value) -> bytes:
    b = bytearray(data)
    struct.pack_into(fmt, b, offset, value)
    return bytes(b)


def test_other_fastText_model_types(model_bytes, tmp_path):
    model_field = 8 + 4 * 7  # args: dim ws epoch minCount neg wordNgrams loss model
    sup = _patched(model_bytes, model_field, "<i", 3)
    with pytest.raises(ModelFormatError, match="'sup'"):
        read_bin(_bad(tmp_path / "sup.bin", sup))
    with pytest.raises(ModelFormatError, match="unknown model type"):
        read_bin(_bad(tmp_path / "m9.bin", _patched(model_bytes, model_field, "<i", 9)))


def test_garbage_sizes_never_allocate(model_bytes, tmp_path):
    # vocabulary size claims 2**31-1 entries; nwords likewise
    bad = _patched(_patched(model_bytes, ARGS_END, "<i", 2**31 - 1), ARGS_END + 4, "<i", 2**31 - 1)
    with pytest.raises(ModelFormatError, match="dictionary entries"):
        read_bin(_bad(tmp_path / "v.bin", bad))
    # input matrix claims 2**40 rows
    m = read_bin(REF / "tiny-maxvocab.bin")
    inp_hdr = (
        len(model_bytes) - (m.output_matrix.size * 4 + 16 + 1) - (m.input_matrix.size * 4 + 16)
    )
    assert struct.unpack_from("<q", model_bytes, inp_hdr)[0] == m.input_matrix.shape[0]
    with pytest.raises(ModelFormatError, match="input matrix"):
        read_bin(_bad(tmp_path / "r.bin", _patched(model_bytes, inp_hdr, "<q", 2**40)))
    with pytest.raises(ModelFormatError, match="shape"):
        read_bin(_bad(tmp_path / "c.bin", _patched(model_bytes, inp_hdr + 8, "<q", 7)))
    # dim field absurd
    with pytest.raises(ModelFormatError, match="dim"):
        read_bin(_bad(tmp_path / "d.bin", _patched(model_bytes, 8, "<i", -5)))


def test_quantized_flag(model_bytes, tmp_path):
    m = read_bin(REF / "tiny-maxvocab.bin")
    flag = (
        len(model_bytes) - (m.output_matrix.size * 4 + 16 + 1) - (m.input_matrix.size * 4 + 16) - 1
    )
    assert model_bytes[flag] == 0
    q = bytearray(model_bytes)
    q[flag] = 1
    with pytest.raises(QuantizedModelError, match="quantized") as err:
        read_bin(_bad(tmp_path / "q.bin", bytes(q)))
    assert isinstance(err.value, NotImplementedError) and isinstance(err.value, ValueError)
    q[flag] = 7
    with pytest.raises(ModelFormatError, match="not 0 or 1"):
        read_bin(_bad(tmp_path / "q7.bin", bytes(q)))


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError):
        read_bin(tmp_path / "none.bin")


def test_write_rejects_inconsistent_shapes(tmp_path):
    m = read_bin(REF / "tiny-maxvocab.bin")
    with pytest.raises(ValueError, match="rows"):
        write_bin(
            tmp_path / "o.bin",
            args=m.args,
            dictionary=m.dictionary,
            input_matrix=m.input_matrix[:100],
            output_matrix=m.output_matrix,
        )
    with pytest.raises(ValueError, match="loss"):
        write_bin(
            tmp_path / "o.bin",
            args={**m.args, "loss": "bogus"},
            dictionary=m.dictionary,
            input_matrix=m.input_matrix,
            output_matrix=m.output_matrix,
        )
    assert not (tmp_path / "o.bin").exists()
