"""``sentvec search`` rebuilds an index whose stored vectors hold NaN instead of reusing it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from sentvec.cli import main

REF = Path(__file__).parent / "data" / "sent2vec-reference"
BIGRAM = str(REF / "tiny-bigram.bin")

pytestmark = pytest.mark.filterwarnings("ignore:.*(in-vocabulary|all-zero):UserWarning")


def test_search_cli_rebuilds_an_index_holding_nan(tmp_path, capsys):
    lines = (REF / "train-sample.txt").read_text(encoding="utf-8").split("\n")[:200]
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    index = tmp_path / "idx"
    args = ["search", "--model", BIGRAM, "--corpus", str(corpus), "--index", str(index), "-k", "3",
            "--query", lines[5], "--json"]
    assert main(args) == 0
    good = json.loads(capsys.readouterr().out)
    emb = index / "embeddings.npy"
    np.save(emb, np.full(np.load(emb).shape, np.nan, dtype=np.float32))
    with pytest.warns(UserWarning, match="unreadable .*NaN"):
        assert main(args) == 0
    out = capsys.readouterr()
    assert "reusing index" not in out.err and "built index of 200 lines" in out.err
    res = json.loads(out.out)
    assert res == good
    assert all(np.isfinite(h["score"]) for h in res["queries"][0]["results"])
    assert np.isfinite(np.load(emb)).all()  # the rebuilt index is clean
