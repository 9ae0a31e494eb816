"""``sentvec serve --workers 2``: two server processes behind one port, each loading the model
(uvicorn's factory ``sentvec.serve.app:app_from_environment``), answering like ``encode``."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
httpx = pytest.importorskip("httpx")

from _serve import Server  # noqa: E402

BIN = Path(__file__).parent / "data" / "sent2vec-reference" / "tiny-bigram.bin"


def test_two_workers_serve_the_memory_mapped_bin(tmp_path):
    from sentvec import Sent2Vec

    key_file = tmp_path / "key"
    key_file.write_text("sk-workers\n", encoding="utf-8")
    srv = Server([str(BIN), "--workers", "2", "--api-key-file", str(key_file)])
    try:
        workers = subprocess.run(
            ["pgrep", "-P", str(srv.proc.pid)], capture_output=True, text=True
        ).stdout.split()
        assert len(workers) >= 2  # the two workers (and possibly multiprocessing's helper)
        texts = [f"the {i} cat sat on the mat" for i in range(40)]
        headers = {"Authorization": "Bearer sk-workers"}
        with httpx.Client(base_url=srv.url, headers=headers) as c:
            got = [c.post("/v1/embeddings", json={"input": t}).json() for t in texts]
            assert (
                c.post(
                    "/v1/embeddings", json={"input": "x"}, headers={"Authorization": ""}
                ).status_code
                == 401
            )
        vecs = np.array([g["data"][0]["embedding"] for g in got])
        assert got[0]["model"] == "tiny-bigram"
        assert np.abs(vecs - Sent2Vec.load(BIN).encode(texts)).max() <= 1e-6
    finally:
        srv.stop()
    assert srv.proc.returncode == 0
