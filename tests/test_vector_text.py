"""The compiled ``%.6g`` text writer against Python's own formatting, byte for byte.

The oracle is Python's ``format(float(v), ".6g")`` (what ``sentvec embed`` wrote before the
compiled writer), applied in the test to the same arrays.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest

from sentvec._vector_text import format_rows, format_rows_python, write_rows

REF = Path(__file__).parent / "data" / "sent2vec-reference"


def python_text(rows: np.ndarray) -> bytes:
    return "".join(" ".join(format(float(v), ".6g") for v in row) + "\n" for row in rows).encode()


def f32(values) -> np.ndarray:
    return np.asarray(values, dtype=np.float32)


def adversarial_values() -> np.ndarray:
    """Ties, tie neighbours, decade and notation boundaries, subnormals, signed zeros, NaN/inf."""
    vals = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        np.nan,
        -np.nan,
        np.inf,
        -np.inf,
        np.finfo(np.float32).max,
        -np.finfo(np.float32).max,
        np.finfo(np.float32).tiny,
        np.finfo(np.float32).smallest_subnormal,
        -np.finfo(np.float32).smallest_subnormal,
    ]
    # exact ties at the 7th significant digit: 2**-k (k >= 9 gives >= 7 digits ending in 5),
    # odd multiples, and 7-digit integers ending in 5 (exact in float32 below 2**24)
    vals += [2.0**-k for k in range(1, 40)] + [3 * 2.0**-k for k in range(1, 40)]
    vals += [
        1000005.0,
        1000015.0,
        1234565.0,
        9999995.0,
        2097145.0,
        16777215.0,
        999999.5,
        99999.95,
        0.001953125,
        0.0009765625,
        1.0000005,
    ]
    # powers of ten (fixed/exponent switch at 1e-4 and 1e6) and the values either side
    tens = [float(f"1e{k}") for k in range(-45, 39)]
    tens += [float(f"9.999995e{k}") for k in range(-44, 38)]
    tens += [float(f"9.999994e{k}") for k in range(-44, 38)]
    tens += [float(f"9.999996e{k}") for k in range(-44, 38)]
    vals += tens
    vals += [0.0001, 0.00009999995, 0.000099999949, 0.000099999951, 1e-5, 999999.4, 999999.6]
    base = f32(vals)
    with np.errstate(over="ignore"):
        up = np.nextafter(base, np.float32(np.inf))
        down = np.nextafter(base, np.float32(-np.inf))
    allv = np.concatenate([base, up, down])
    allv = np.concatenate([allv, -allv])
    # subnormals, and payload NaNs
    sub = np.arange(1, 4096, dtype=np.uint32).view(np.float32)
    nans = np.array([0x7FC00001, 0xFFC00000, 0x7F800001, 0xFFFFFFFF], np.uint32).view(np.float32)
    return np.concatenate([allv, sub, sub * np.float32(977), nans]).astype(np.float32)


@pytest.fixture(scope="module")
def adversarial() -> np.ndarray:
    return adversarial_values()


def test_adversarial_values_one_per_row(adversarial):
    rows = adversarial.reshape(-1, 1)
    assert format_rows(rows) == python_text(rows.tolist())


def test_adversarial_values_inside_rows(adversarial):
    # a value that needs Python's formatting in the middle of a row, in rows of different widths
    v = adversarial[: len(adversarial) // 7 * 7]
    for width in (7, 49):
        rows = v[: len(v) // width * width].reshape(-1, width)
        assert format_rows(rows) == python_text(rows.tolist())


def test_exact_ties_are_rounded_half_to_even_as_python_does():
    rows = f32([[0.001953125, 1000005.0, 1000015.0, 2.0**-20]])
    text = format_rows(rows)
    assert text == b"0.00195312 1e+06 1.00002e+06 9.53674e-07\n"
    assert text == python_text(rows.tolist())


def test_random_bit_patterns():
    # every float32 class at once: normal, subnormal, both signs, NaN and inf bit patterns
    rng = np.random.default_rng(21)
    rows = rng.integers(0, 2**32, size=(4000, 64), dtype=np.uint64).astype(np.uint32)
    rows = rows.view(np.float32)
    assert format_rows(rows) == python_text(rows.tolist())


def test_embedding_scale_values():
    rng = np.random.default_rng(5)
    rows = rng.standard_normal((3000, 100)) * rng.choice([1e-3, 0.05, 1.0, 30.0], (3000, 1))
    rows = rows.astype(np.float32)
    text = python_text(rows.tolist())
    assert format_rows(rows) == format_rows_python(rows) == text
    sink = io.BytesIO()
    assert write_rows(sink, rows) == len(text) and sink.getvalue() == text


def test_reference_model_output_byte_identical():
    from sentvec.sent2vec.model import Sent2Vec

    lines = (REF / "sentences.txt").read_text(encoding="utf-8").splitlines()
    for name in ("tiny-bigram", "tiny-unigram", "tiny-maxvocab"):
        model = Sent2Vec.load(REF / f"{name}.bin")
        emb, _ = model.encode_with_stats(lines, num_threads=1)
        official = np.load(REF / f"{name}.vectors.npy")
        for rows in (emb, official, emb / np.float32(7)):
            assert format_rows(rows) == python_text(rows.tolist())


def test_shapes_and_refusals():
    assert format_rows(np.zeros((0, 5), np.float32)) == b""
    assert format_rows(np.zeros((3, 0), np.float32)) == b"\n\n\n"
    fortran = np.asfortranarray(f32([[1.5, -2.25], [3e-7, 4e9]]))
    assert format_rows(fortran) == b"1.5 -2.25\n3e-07 4e+09\n"
    with pytest.raises(ValueError, match="2-D float32 array"):
        format_rows(np.zeros((2, 2), np.float64))
    with pytest.raises(ValueError, match="2-D float32 array"):
        format_rows(np.zeros(3, np.float32))


def test_embed_text_output_is_python_formatting_of_its_npy_output(tmp_path, capsys):
    from sentvec.cli import main

    model = str(REF / "tiny-bigram.bin")
    inp = str(REF / "sentences.txt")
    assert main(["embed", model, "-i", inp, "-o", str(tmp_path / "v.npy")]) == 0
    assert (
        main(["embed", model, "-i", inp, "-o", str(tmp_path / "v.txt"), "--batch-size", "100"]) == 0
    )
    vectors = np.load(tmp_path / "v.npy")
    np.testing.assert_array_equal(vectors, np.load(REF / "tiny-bigram.vectors.npy"))
    text = (tmp_path / "v.txt").read_bytes()
    assert text == python_text(vectors.tolist())
    capsys.readouterr()
    assert main(["embed", model, "-i", inp]) == 0
    assert capsys.readouterr().out.encode() == text
