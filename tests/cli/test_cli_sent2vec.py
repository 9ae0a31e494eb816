"""``sentvec embed`` and ``sentvec tokenize`` through ``sentvec.cli.main``."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import numpy as np
import pytest

from sentvec.cli import main

REF = Path(__file__).parents[1] / "data" / "sent2vec-reference"
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
    assert (
        "2 zero vectors (1 empty or whitespace-only lines, 1 with no known word)"
        in capsys.readouterr().err
    )


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
    assert "lines not valid UTF-8: 1 (--errors replace)" in capsys.readouterr().err


def test_embed_bad_model_is_a_clean_error(tmp_path, capsys):
    assert (
        main(
            [
                "embed",
                str(REF / "sentences.txt"),
                "-i",
                str(REF / "sentences.txt"),
                "-o",
                str(tmp_path / "v.npy"),
            ]
        )
        == 2
    )
    assert "not a sent2vec" in capsys.readouterr().err
    assert main(["embed", str(tmp_path / "nope.bin")]) == 2


def test_tokenize_moses_lowercase_streams_every_line(tmp_path, capsys):
    inp = tmp_path / "raw.txt"
    inp.write_text("The Cat's HAT, isn't it?\n\nTabs\tand  spaces\n", encoding="utf-8")
    out = tmp_path / "tok.txt"
    assert main(["tokenize", "-i", str(inp), "-o", str(out)]) == 0
    assert out.read_text(encoding="utf-8").split("\n") == [
        "the cat 's hat , isn 't it ?",
        "",
        "tabs and spaces",
        "",
    ]
    assert main(["tokenize", "-i", str(inp), "--tokenizer", "whitespace", "--no-lowercase"]) == 0
    assert capsys.readouterr().out.split("\n")[:3] == [
        "The Cat's HAT, isn't it?",
        "",
        "Tabs and spaces",
    ]


@pytest.mark.parametrize("errors", ["strict", "replace", "surrogateescape"])
def test_tokenize_bytes_path_equals_the_line_by_line_preparation(tmp_path, capsys, errors):
    """The command's bytes-in, bytes-out path against the lines as the reader decodes them,
    prepared one by one: invalid UTF-8 (refused, replaced or kept), a BOM at the start, lines
    only Python lower-cases, a kept \\r, no final newline."""
    from sentvec._io import TextLineReader
    from sentvec.sent2vec.preprocessing import Preprocessing

    raw = (
        b"\xef\xbb\xbfThe Cat's HAT, isn't it?\nCAF\xc9 \xed\xa0\x80 (ok)...\n"
        + "İstanbul ΣΟΦΟΣ. Mr. X\r\n\n".encode()
        + b"\xe2\x82"
    )
    inp, out = tmp_path / "raw.txt", tmp_path / "tok.txt"
    inp.write_bytes(raw)
    rc = main(["tokenize", "-i", str(inp), "-o", str(out), "--errors", errors])
    err = capsys.readouterr().err
    if errors == "strict":
        assert rc == 2 and "line 2 is not valid UTF-8" in err and not out.exists()
        return
    prep = Preprocessing(lowercase=True, tokenizer="moses")
    want = [prep.prepare(line) for line in TextLineReader(str(inp), errors)]
    assert rc == 0 and "5 lines" in err and "lines not valid UTF-8: 2" in err
    assert out.read_bytes() == b"".join(t.encode("utf-8", "surrogateescape") + b"\n" for t in want)


def test_tokenize_then_embed_equals_model_preprocessing(tmp_path):
    from sentvec.sent2vec.model import Sent2Vec

    raw = ["The City of London is LARGE.", "A man, a plan."]
    inp = tmp_path / "raw.txt"
    inp.write_text("\n".join(raw) + "\n", encoding="utf-8")
    assert main(["tokenize", "-i", str(inp), "-o", str(tmp_path / "tok.txt")]) == 0
    assert (
        main(["embed", MODEL, "-i", str(tmp_path / "tok.txt"), "-o", str(tmp_path / "v.npy")]) == 0
    )
    base = Sent2Vec.load(MODEL)
    m = Sent2Vec(
        base.dictionary,
        base.input_matrix,
        base.output_matrix,
        args=base.args,
        preprocessing={"lowercase": True, "tokenizer": "moses"},
    )
    np.testing.assert_array_equal(np.load(tmp_path / "v.npy"), m.encode(raw))


@pytest.mark.parametrize(
    "argv", [["embed", MODEL, "--batch-size", "0"], ["embed", MODEL, "--threads", "-1"]]
)
def test_embed_bad_numbers(argv, capsys):
    with pytest.raises(SystemExit) as exc:  # a usage error, found when parsing
        main(argv)
    assert exc.value.code == 2
    assert "expected an integer >= 1" in capsys.readouterr().err


def test_utf8_bom_at_file_start_is_dropped_elsewhere_kept(tmp_path, capsys):
    from sentvec.sent2vec.model import Sent2Vec

    plain, bom = tmp_path / "plain.txt", tmp_path / "bom.txt"
    plain.write_bytes(b"the city\nof london\n")
    bom.write_bytes(b"\xef\xbb\xbfthe city\nof london\n")
    for name in ("plain", "bom"):
        assert (
            main(
                [
                    "embed",
                    MODEL,
                    "-i",
                    str(tmp_path / f"{name}.txt"),
                    "-o",
                    str(tmp_path / f"{name}.npy"),
                ]
            )
            == 0
        )
    a, b = np.load(tmp_path / "plain.npy"), np.load(tmp_path / "bom.npy")
    assert b[0].any()  # 'the' was not glued to the BOM (which gave a zero vector)
    np.testing.assert_array_equal(a, b)
    assert "0 zero vectors" in capsys.readouterr().err
    assert (
        main(
            [
                "tokenize",
                "-i",
                str(bom),
                "-o",
                str(tmp_path / "tok.txt"),
                "--tokenizer",
                "whitespace",
            ]
        )
        == 0
    )
    assert (tmp_path / "tok.txt").read_bytes() == b"the city\nof london\n"
    # a BOM inside the file is text like any other character
    mid = tmp_path / "mid.txt"
    mid.write_bytes(b"the city\n\xef\xbb\xbfthe city\n")
    assert main(["tokenize", "-i", str(mid), "--tokenizer", "whitespace"]) == 0
    assert capsys.readouterr().out == "the city\n\ufeffthe city\n"
    model = Sent2Vec.load(MODEL)
    np.testing.assert_array_equal(a[0], model.encode("the city"))


def test_empty_or_missing_npy_in_model_directory_is_a_clean_error(tmp_path, capsys):
    from sentvec.exceptions import ModelFormatError
    from sentvec.sent2vec.model import Sent2Vec

    inp = tmp_path / "in.txt"
    inp.write_text("the city\n", encoding="utf-8")
    for name in ("output", "input", "counts"):
        d = tmp_path / f"m-{name}"
        Sent2Vec.load(MODEL).save(d)
        (d / f"{name}.npy").write_bytes(b"")  # empty: numpy raises EOFError
        assert main(["embed", str(d), "-i", str(inp), "-o", str(tmp_path / "v.npy")]) == 2
        err = capsys.readouterr().err
        assert f"{name}.npy" in err and "not a valid .npy file" in err, err
        for mmap in (True, False):
            with pytest.raises(ModelFormatError, match=f"{name}.npy"):
                Sent2Vec.load(d, mmap=mmap)
        (d / f"{name}.npy").unlink()
        with pytest.raises(ModelFormatError, match=f"missing {name}.npy"):
            Sent2Vec.load(d)
    assert not (tmp_path / "v.npy").exists()


def test_pipeline_directory_given_to_embed_names_the_right_commands(tmp_path, capsys):
    from sentvec.encoders import Pipeline
    from sentvec.sent2vec.model import Sent2Vec

    pipe = tmp_path / "pipe"
    Pipeline(Sent2Vec.load(MODEL)).save(pipe)
    assert main(["embed", str(pipe), "-i", str(REF / "sentences.txt")]) == 2
    err = capsys.readouterr().err
    assert "is a saved sentvec pipeline" in err and "sentvec encode" in err
    assert "no config.json" not in err
    (pipe / "pipeline.json").unlink()
    assert main(["embed", str(pipe), "-i", str(REF / "sentences.txt")]) == 2
    err = capsys.readouterr().err
    assert "looks like a saved sentvec pipeline" in err and "no pipeline.json" in err


def test_directories_as_input_or_output_are_named_as_such(tmp_path, capsys):
    d = tmp_path / "u7"
    d.mkdir()
    assert main(["embed", MODEL, "-i", str(REF / "sentences.txt"), "-o", str(d)]) == 2
    assert f"output {str(d)!r} is an existing directory" in capsys.readouterr().err
    assert main(["tokenize", "-i", str(REF / "sentences.txt"), "-o", str(d)]) == 2
    assert "is an existing directory" in capsys.readouterr().err
    assert main(["embed", MODEL, "-i", str(d)]) == 2
    assert f"input {str(d)!r} is a directory" in capsys.readouterr().err
    assert list(d.iterdir()) == []  # no temporary file left behind


def test_unknown_option_is_reported_in_the_sub_commands_usage(capsys):
    # a fresh-clone check: an option the sub-command lacks printed the top-level usage
    # ("usage: sentvec [-h] [--version] COMMAND ..."), which does not list the right options
    with pytest.raises(SystemExit) as exc:
        main(["embed", "model.bin", "--device", "gpu"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: sentvec embed ") and "--batch-size" in err
    assert err.rstrip().endswith("sentvec embed: error: unrecognized arguments: --device gpu")
    with pytest.raises(SystemExit) as exc:
        main(["--bogus"])
    assert exc.value.code == 2
    assert (
        capsys.readouterr().err.rstrip().endswith("sentvec: error: unrecognized arguments: --bogus")
    )
