"""`sentvec embed` writing to a stdout without a binary buffer."""

from __future__ import annotations

import sys


def test_embed_to_a_text_only_stdout(monkeypatch):
    # a stdout without .buffer (io.StringIO) gets the same text
    import io
    from pathlib import Path

    from sentvec.cli import main

    ref = Path(__file__).parents[1] / "data" / "sent2vec-reference"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"the city\nof london\n")))
    out = io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    assert main(["embed", str(ref / "tiny-bigram.bin")]) == 0
    from sentvec.sent2vec.model import Sent2Vec

    vectors = Sent2Vec.load(ref / "tiny-bigram.bin").encode(["the city", "of london"])
    assert out.getvalue() == "".join(
        " ".join(f"{v:.6g}" for v in row) + "\n" for row in vectors.tolist()
    )
