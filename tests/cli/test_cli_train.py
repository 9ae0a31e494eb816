"""``sentvec train-sent2vec``: official and snake-case flags, output formats, errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from sentvec.cli import main
from sentvec.sent2vec.model import Sent2Vec

SAMPLE = Path(__file__).parents[1] / "data" / "sent2vec-reference" / "train-sample.txt"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    p = tmp_path_factory.mktemp("cli") / "corpus.txt"
    p.write_text(
        "\n".join(SAMPLE.read_text(encoding="utf-8").splitlines()[:800]) + "\n", encoding="utf-8"
    )
    return p


def test_official_flags_write_a_bin_equal_to_snake_case_directory(corpus, tmp_path, capsys):
    official = [
        "train-sent2vec",
        "-input",
        str(corpus),
        "-output",
        str(tmp_path / "m.bin"),
        "-dim",
        "12",
        "-epoch",
        "2",
        "-lr",
        "0.1",
        "-lrUpdateRate",
        "50",
        "-wordNgrams",
        "2",
        "-minCount",
        "2",
        "-minCountLabel",
        "3",
        "-neg",
        "4",
        "-thread",
        "1",
        "-t",
        "0.001",
        "-dropoutK",
        "3",
        "-bucket",
        "3000",
        "-maxVocabSize",
        "0",
        "-loss",
        "ns",
        "--no-progress",
    ]
    assert main(official) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["written"] == [str(tmp_path / "m.bin")]
    # "epochs" said 3 and "loss" was the short third pass's
    assert summary["epochs"] == 2
    assert summary["passes"] == 3  # 2 official epochs = 2.3 passes (</s> and OOV tokens count)
    snake = [
        "train-sent2vec",
        "--input",
        str(corpus),
        "--output",
        str(tmp_path / "mdir"),
        "--dim",
        "12",
        "--epoch",
        "2",
        "--lr",
        "0.1",
        "--lr-update-rate",
        "50",
        "--word_ngrams",
        "2",
        "--min-count",
        "2",
        "--min_count_label",
        "3",
        "--neg",
        "4",
        "--thread",
        "1",
        "--t",
        "0.001",
        "--dropout-k",
        "3",
        "--bucket",
        "3000",
        "--report",
        str(tmp_path / "report.json"),
    ]
    assert main(snake) == 0
    a = Sent2Vec.load(tmp_path / "m.bin")
    b = Sent2Vec.load(tmp_path / "mdir")
    assert a.dim == b.dim == 12 and a.dictionary.bucket == 3000
    assert a.args["minCount"] == 2 and a.args["neg"] == 4 and a.args["t"] == 0.001
    # thread=1 runs are bit-reproducible, so both spellings trained the same model
    np.testing.assert_array_equal(
        np.asarray(a.input_matrix)[: b.input_matrix.shape[0]], np.asarray(b.input_matrix)
    )
    np.testing.assert_array_equal(a.output_matrix, b.output_matrix)
    assert b.args["lr"] == 0.1 and b.args["dropoutK"] == 3
    rep = json.loads((tmp_path / "report.json").read_text())
    assert rep["threads"] == 1 and len(rep["epochs"]) == 3 and rep["epoch"] == 2
    assert rep["epochs"][2]["tokens"] < rep["n_tokens"] == rep["epochs"][1]["tokens"]
    assert summary["loss"] == rep["epochs"][1]["loss"] != rep["epochs"][2]["loss"]


def test_unigram_flags_with_bucket_zero_and_both_formats(corpus, tmp_path):
    out = tmp_path / "uni"
    assert (
        main(
            [
                "train-sent2vec",
                "-input",
                str(corpus),
                "-output",
                str(out),
                "-dim",
                "8",
                "-epoch",
                "1",
                "-wordNgrams",
                "1",
                "-bucket",
                "0",
                "-minCount",
                "2",
                "-thread",
                "1",
                "--format",
                "both",
                "--update",
                "target",
                "--epoch-tokens",
                "trained",
                "--report",
                str(tmp_path / "r.json"),
            ]
        )
        == 0
    )
    assert len(json.loads((tmp_path / "r.json").read_text())["epochs"]) == 1
    d, b = Sent2Vec.load(out), Sent2Vec.load(tmp_path / "uni.bin")
    assert d.dictionary.word_ngrams == 1 and d.input_matrix.shape[0] == d.nwords
    np.testing.assert_array_equal(d.input_matrix, b.input_matrix[: d.input_matrix.shape[0]])


def test_errors_are_reported_with_exit_code_2(corpus, tmp_path, capsys):
    assert (
        main(
            ["train-sent2vec", "-input", str(tmp_path / "nope.txt"), "-output", str(tmp_path / "x")]
        )
        == 2
    )
    assert "nope.txt" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:  # a usage error, found when parsing
        main(["train-sent2vec", "-input", str(corpus), "-output", str(tmp_path / "x"), "-dim", "0"])
    assert exc.value.code == 2
    assert "-dim/--dim: expected an integer in [1, 2147483647], got '0'" in capsys.readouterr().err
    assert (
        main(
            [
                "train-sent2vec",
                "-input",
                str(corpus),
                "-output",
                str(tmp_path / "x"),
                "-wordNgrams",
                "2",
                "-bucket",
                "0",
            ]
        )
        == 2
    )
    assert "bucket=0" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["train-sent2vec", "-input", str(corpus), "-output", "x", "-ws", "5"])


def _no_training(monkeypatch):
    """Make any call of ``Sent2VecTrainer.fit`` fail the test: the output check comes first."""
    from sentvec.sent2vec.trainer import Sent2VecTrainer

    def fit(self, *a, **k):
        raise AssertionError("trained before checking the output path")

    monkeypatch.setattr(Sent2VecTrainer, "fit", fit)


def test_bad_output_fails_before_training(corpus, tmp_path, capsys, monkeypatch):
    _no_training(monkeypatch)
    existing = tmp_path / "existing.txt"
    existing.write_text("keep me\n")
    full = tmp_path / "full"
    full.mkdir()
    (full / "notes.txt").write_text("keep me too\n")
    base = ["train-sent2vec", "-input", str(corpus), "-dim", "8", "--no-progress"]
    cases = [
        (["-output", str(existing)], "exists and is not a directory"),
        (["-output", str(full)], "not a Sent2Vec model directory"),
        (["-output", str(existing / "m.bin")], "is not a directory"),
        (["-output", str(existing / "m"), "--format", "both"], "is not a directory"),
        (["-output", str(full), "--format", "bin"], "is an existing directory"),
        (["-output", str(tmp_path / "m.bin"), "--report", str(full)], "--report"),
    ]
    for extra, msg in cases:
        assert main(base + extra) == 2, extra
        err = capsys.readouterr().err
        assert msg in err and "sentvec: error:" in err, (extra, err)
    assert existing.read_text() == "keep me\n" and sorted(p.name for p in full.iterdir()) == [
        "notes.txt"
    ]
    assert not (tmp_path / "m.bin").exists()


def test_unwritable_output_directory_fails_before_training(corpus, tmp_path, capsys, monkeypatch):
    import errno
    import tempfile

    _no_training(monkeypatch)

    def read_only(*a, **k):
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(tempfile, "mkstemp", read_only)
    assert (
        main(
            [
                "train-sent2vec",
                "-input",
                str(corpus),
                "-output",
                str(tmp_path / "model.bin"),
                "--no-progress",
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert f"{str(tmp_path)!r} is not writable (Read-only file system)" in err
    assert not list(tmp_path.iterdir())  # nothing created by the check
    # a missing parent folder is refused, not created
    assert (
        main(
            [
                "train-sent2vec",
                "-input",
                str(corpus),
                "-output",
                str(tmp_path / "new" / "model.bin"),
                "--no-progress",
            ]
        )
        == 2
    )
    assert "does not exist; create it first" in capsys.readouterr().err
    assert not (tmp_path / "new").exists()
