"""``sentvec embed`` and ``sentvec tokenize`` through ``sentvec.cli.main``."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import numpy as np
import pytest

from sentvec.cli import main

REF = Path(__file__).parent / "data" / "sent2vec-reference"
MODEL = str(REF / "tiny-bigram.bin")


def test_embed_npy_equals_official_vectors(tmp_path, capsys):
    out = tmp_path / "v.npy"
    assert main(["embed", MODEL, "--input", str(REF / "sentences.txt"), "--output", str(out)]) == 0
    emb = np.load(out)
    ref = np.load(REF / "tiny-bigram.vectors.npy")
    assert emb.shape == (490, 16)
    assert np.abs(emb - ref).max() <= 1e-5
    err = capsys.readouterr().err
    assert "490 lines -> 490 vectors" in err and "2 zero vectors (1 empty" in err


def test_embed_text_output_one_line_per_input_line(tmp_path, capsys):
    inp = tmp_path / "in.txt"
    inp.write_text("the city of london\n\nqqqzz\nthe city\n", encoding="utf-8")
    out = tmp_path / "v.txt"
    assert main(["embed", MODEL, "-i", str(inp), "-o", str(out), "--threads", "1"]) == 0
    rows = np.loadtxt(out, dtype=np.float64, ndmin=2)
    assert rows.shape == (4, 16)
    assert not rows[1].any() and not rows[2].any()
    from sentvec.sent2vec.model import Sent2Vec

    expect = Sent2Vec.load(MODEL).encode(["the city of london", "the city"])
    np.testing.assert_allclose(rows[[0, 3]], expect, rtol=1e-5, atol=1e-7)
    assert "2 zero vectors (1 empty or whitespace-only lines, 1 with no known word)" in \
        capsys.readouterr().err


def test_embed_reads_stdin_and_writes_stdout(monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"the city\nof london")))
    assert main(["embed", MODEL]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 2 and all(len(line.split()) == 16 for line in out)


def test_embed_invalid_utf8_policy(tmp_path, capsys):
    inp = tmp_path / "bad.txt"
    inp.write_bytes(b"the city\nbad \xff\xfe bytes\nof london\n")
    out = tmp_path / "v.npy"
    assert main(["embed", MODEL, "-i", str(inp), "-o", str(out)]) == 2
    assert "line 2 is not valid UTF-8" in capsys.readouterr().err
    assert not out.exists()
    assert main(["embed", MODEL, "-i", str(inp), "-o", str(out), "--errors", "replace"]) == 0
    assert np.load(out).shape == (3, 16)
    assert "1 lines were not valid UTF-8" in capsys.readouterr().err


def test_embed_bad_model_is_a_clean_error(tmp_path, capsys):
    assert main(["embed", str(REF / "sentences.txt"), "-i", str(REF / "sentences.txt"),
                 "-o", str(tmp_path / "v.npy")]) == 2
    assert "not a sent2vec" in capsys.readouterr().err
    assert main(["embed", str(tmp_path / "nope.bin")]) == 2


def test_tokenize_moses_lowercase_streams_every_line(tmp_path, capsys):
    inp = tmp_path / "raw.txt"
    inp.write_text("The Cat's HAT, isn't it?\n\nTabs\tand  spaces\n", encoding="utf-8")
    out = tmp_path / "tok.txt"
    assert main(["tokenize", "-i", str(inp), "-o", str(out)]) == 0
    assert out.read_text(encoding="utf-8").split("\n") == [
        "the cat 's hat , isn 't it ?", "", "tabs and spaces", ""]
    assert main(["tokenize", "-i", str(inp), "--tokenizer", "whitespace", "--no-lowercase"]) == 0
    assert capsys.readouterr().out.split("\n")[:3] == ["The Cat's HAT, isn't it?", "",
                                                       "Tabs and spaces"]


def test_tokenize_then_embed_equals_model_preprocessing(tmp_path):
    from sentvec.sent2vec.model import Sent2Vec

    raw = ["The City of London is LARGE.", "A man, a plan."]
    inp = tmp_path / "raw.txt"
    inp.write_text("\n".join(raw) + "\n", encoding="utf-8")
    assert main(["tokenize", "-i", str(inp), "-o", str(tmp_path / "tok.txt")]) == 0
    assert main(["embed", MODEL, "-i", str(tmp_path / "tok.txt"), "-o",
                 str(tmp_path / "v.npy")]) == 0
    base = Sent2Vec.load(MODEL)
    m = Sent2Vec(base.dictionary, base.input_matrix, base.output_matrix, args=base.args,
                 preprocessing={"lowercase": True, "tokenizer": "moses"})
    np.testing.assert_array_equal(np.load(tmp_path / "v.npy"), m.encode(raw))


@pytest.mark.parametrize("argv", [["embed", MODEL, "--batch-size", "0"],
                                  ["embed", MODEL, "--threads", "-1"]])
def test_embed_bad_numbers(argv, capsys):
    assert main(argv) == 2
    assert "is invalid" in capsys.readouterr().err
