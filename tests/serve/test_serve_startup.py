"""``sentvec serve`` start-up: the port is bound before the models load (a port in use fails at
once), and ``/health`` and the embedding routes answer 503 while the models load, then 200."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("fastapi")
uvicorn = pytest.importorskip("uvicorn")
httpx = pytest.importorskip("httpx")

from sentvec.serve import create_app, free_port  # noqa: E402

BIN = Path(__file__).parents[1] / "data" / "sent2vec-reference" / "tiny-bigram.bin"


class _GatedEncoder:
    """An encoder whose first ``encode`` (the server's warm-up, while loading) waits for a gate."""

    def __init__(self) -> None:
        self.gate = threading.Event()

    def encode(self, texts: list[str]) -> np.ndarray:
        assert self.gate.wait(60), "the test never opened the gate"
        return np.array([[len(t), 1.0, 0.0] for t in texts], dtype=np.float32)


def test_health_is_503_while_the_models_load_then_200():
    enc = _GatedEncoder()
    app = create_app({"gated": enc}, background=True)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while not server.started:
            assert time.monotonic() < deadline, "the server never started"
            time.sleep(0.02)
        r = httpx.get(url + "/health")
        assert r.status_code == 503 and "still loading" in r.json()["error"]
        r = httpx.post(url + "/v1/embeddings", json={"input": "a cat"})
        assert r.status_code == 503
        assert "still loading its models" in r.json()["error"]["message"]
        assert r.headers["retry-after"] == "1"
        assert httpx.post(url + "/embed", json={"inputs": "a cat"}).status_code == 503
        assert httpx.get(url + "/metrics").status_code == 200  # scrapes work while loading
        enc.gate.set()
        while httpx.get(url + "/health").status_code != 200:
            assert time.monotonic() < deadline, "the models never finished loading"
            time.sleep(0.02)
        r = httpx.post(url + "/v1/embeddings", json={"input": "a cat"})
        assert r.status_code == 200 and r.json()["data"][0]["embedding"] == [5.0, 1.0, 0.0]
    finally:
        enc.gate.set()
        server.should_exit = True
        thread.join(30)


def test_a_port_in_use_is_reported_before_the_models_load():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        res = subprocess.run(
            [sys.executable, "-m", "sentvec", "serve", str(BIN), "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert res.returncode != 0
    assert f"cannot listen on 127.0.0.1:{port}" in res.stderr
    assert "in use" in res.stderr
    # "before" is an order, not a duration: the server logs "loading model" as it starts
    # loading one, so its absence shows the refusal came first (a wall-clock bound of 60 s
    # failed at 65 s on a machine at load 5-17)
    assert "loading model" not in res.stderr


def test_a_model_that_cannot_load_stops_the_server_with_its_reason(tmp_path):
    missing = tmp_path / "missing.bin"
    res = subprocess.run(
        [sys.executable, "-m", "sentvec", "serve", str(missing), "--port", str(free_port())],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 1
    assert "the models could not be loaded" in res.stderr and "missing.bin" in res.stderr
    assert res.stderr.count("missing.bin") == 2  # "loading model ... from", then the reason once


def test_port_0_reports_the_port_the_system_chose():
    """``--port 0`` binds a free port; the log names that port (not 0) and it answers."""
    import re

    proc = subprocess.Popen(
        [sys.executable, "-m", "sentvec", "serve", str(BIN), "--port", "0"],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        deadline = time.monotonic() + 60
        found = None
        while found is None and time.monotonic() < deadline:
            found = re.search(r"listening on http://127\.0\.0\.1:(\d+)", proc.stderr.readline())
        assert found is not None, "no 'listening on' line within 60 s"
        port = int(found.group(1))
        assert port != 0
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.05)
        assert httpx.get(f"http://127.0.0.1:{port}/health").status_code == 200
    finally:
        proc.terminate()
        proc.wait(30)


linux_only = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="SO_REUSEPORT balancing is Linux-only"
)


@linux_only
def test_a_port_held_with_so_reuseport_is_in_use_for_workers_too():
    """``--workers 2`` binds its workers' sockets with SO_REUSEPORT, yet a port another program
    holds with SO_REUSEPORT (another ``sentvec serve --workers 2``, say) is still refused: the
    server probes the port without the option first."""
    with socket.socket() as taken:
        taken.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        res = subprocess.run(
            [sys.executable, "-m", "sentvec", "serve", str(BIN), "--port", str(port)]
            + ["--workers", "2"],
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert res.returncode != 0
    assert f"cannot listen on 127.0.0.1:{port}" in res.stderr and "in use" in res.stderr


@linux_only
def test_a_per_worker_listener_pickles_as_a_socket_of_its_own():
    """What each worker receives: a new socket on the supervisor's address, not a copy of the
    supervisor's; the supervisor's never listens, so connections go to the workers' only."""
    import pickle

    from sentvec.serve.listeners import per_worker_listener

    parent = per_worker_listener("127.0.0.1", 0)
    with parent:
        port = parent.getsockname()[1]
        workers = [pickle.loads(pickle.dumps(parent)) for _ in range(2)]
        try:
            for w in workers:
                assert type(w) is socket.socket and w.fileno() != parent.fileno()
                assert w.getsockname() == ("127.0.0.1", port)
                assert w.getsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT) == 1
                w.listen(8)
            for _ in range(8):  # every connection reaches a listening worker socket
                with socket.create_connection(("127.0.0.1", port), timeout=5):
                    pass
            accepted = 0
            for w in workers:
                w.setblocking(False)
                while True:
                    try:
                        conn, _ = w.accept()
                    except BlockingIOError:
                        break
                    conn.close()
                    accepted += 1
            assert accepted == 8
        finally:
            for w in workers:
                w.close()


def test_embedding_routes_answer_mounted_under_a_prefix_too():
    """The embedding routes take a short path past FastAPI's router; mounted under a prefix,
    the application routes them itself, with the same answers, and errors in the route's
    dialect (OpenAI's on ``.../v1/embeddings``)."""
    import asyncio

    from starlette.applications import Starlette
    from starlette.routing import Mount

    from sentvec import Sent2Vec

    model = Sent2Vec.load(BIN)
    texts = ["a cat sat on the mat", "the dog"]

    async def main() -> None:
        inner = create_app({"s2v": model})
        outer = Starlette(routes=[Mount("/api", app=inner)])
        for app, prefix in ((inner, ""), (outer, "/api")):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
                r = await c.post(prefix + "/v1/embeddings", json={"input": texts})
                assert r.status_code == 200, r.text
                got = np.array([d["embedding"] for d in r.json()["data"]], dtype=np.float32)
                assert np.abs(got - model.encode(texts)).max() <= 1e-6
                r = await c.post(prefix + "/embed", json={"inputs": texts, "normalize": False})
                assert r.status_code == 200 and len(r.json()) == 2
                r = await c.post(prefix + "/v1/embeddings", json={"input": []})
                assert r.status_code == 400 and "empty list" in r.json()["error"]["message"]
                r = await c.get(prefix + "/v1/embeddings")  # other methods: the router's
                assert r.status_code == 405 and "not allowed" in r.text

    asyncio.run(main())


class _CpuTransformerLike:
    """Looks like a transformer on the CPU to the server (a device, token counts, a
    ``batch_size``); every call with more than one text waits for a gate."""

    device = "cpu"
    pooling = "mean"
    max_length = 128

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.calls: list[tuple[int, int, int]] = []  # (texts, batch_size, longest in words)

    def count_tokens(self, texts: list[str]) -> np.ndarray:
        return np.array([len(t.split()) + 2 for t in texts], dtype=np.int64)

    def encode(self, texts: list[str], batch_size: int = 32) -> np.ndarray:
        self.calls.append((len(texts), batch_size, max(len(t.split()) for t in texts)))
        if len(texts) > 1:
            assert self.gate.wait(60), "the test never opened the gate"
        return np.ones((len(texts), 3), dtype=np.float32)


def test_health_waits_until_a_cpu_transformer_has_warmed_its_batch_shapes():
    enc = _CpuTransformerLike()
    app = create_app({"warm": enc}, background=True)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while not enc.calls or not server.started:
            assert time.monotonic() < deadline, "the server never started warming"
            time.sleep(0.02)
        while enc.calls[-1][0] < 2:  # past the one-text warm-up, held at the first batch
            assert time.monotonic() < deadline, "the server never warmed a batch"
            time.sleep(0.02)
        assert httpx.get(url + "/health").status_code == 503  # still warming
        enc.gate.set()
        while httpx.get(url + "/health").status_code != 200:
            assert time.monotonic() < deadline, "the server never finished warming"
            time.sleep(0.02)
    finally:
        enc.gate.set()
        server.should_exit = True
        thread.join(30)
    from sentvec.serve.served_model import WARM_TOKEN_LENGTHS

    size = enc.calls[0][1]
    assert size > 1 and all(b == size for _, b, _ in enc.calls)
    for tokens in WARM_TOKEN_LENGTHS:  # every forward batch size at every warmed length
        sizes = {n for n, _, words in enc.calls if words == tokens - 2}
        assert set(range(1, size + 1)) <= sizes, (tokens, sorted(sizes))
    assert max(n for n, _, _ in enc.calls) > size  # one gathered batch wider than a pass
