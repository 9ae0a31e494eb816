"""`encode --dask-scheduler` at a server that accepts and stays silent,
or at one that is not Dask (docs/RELIABILITY.md lists both). Servers bind 127.0.0.1 only
and every wait is bounded."""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("distributed")

from sentvec.cli import main  # noqa: E402

REF = Path(__file__).parents[1] / "data" / "sent2vec-reference"
MODEL = str(REF / "tiny-bigram.bin")


class _Server:
    """A TCP server on 127.0.0.1 that is silent, or answers like an HTTP server."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.conns: list[socket.socket] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        deadline = time.monotonic() + 60  # bounded, whatever the test does
        while not self.stop.is_set() and time.monotonic() < deadline:
            try:
                c, _ = self.sock.accept()
            except OSError:
                continue
            self.conns.append(c)
            if self.mode == "http":
                c.settimeout(5)
                try:
                    c.recv(65536)
                    c.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
                except OSError:
                    pass

    def close(self) -> None:
        self.stop.set()
        self.thread.join(5)
        for c in self.conns:
            c.close()
        self.sock.close()


@pytest.mark.parametrize(
    "mode, expected",
    [
        ("silent", "no Dask scheduler answered at"),
        ("http", "is not a Dask scheduler"),
    ],
)
def test_encode_at_a_silent_or_non_dask_server_is_a_connection_error(
    tmp_path, capsys, mode, expected
):
    """A silent server (or an HTTP one) held `encode --dask-scheduler` for 300 s+ with no
    message; a peer that is not Dask gave distributed's 'Unable to allocate 3.07 EiB'
    traceback. Both are now a one-line connection error, within --dask-timeout."""
    server = _Server(mode)
    try:
        argv = ["encode", "--model", MODEL, "--input", str(REF / "sentences.txt")]
        argv += ["--output", str(tmp_path / "o"), "--dask-timeout", "2"]
        t0 = time.monotonic()
        rc = main([*argv, "--dask-scheduler", f"tcp://127.0.0.1:{server.port}"])
        elapsed = time.monotonic() - t0
    finally:
        server.close()
    err = capsys.readouterr().err
    assert rc == 2 and expected in err and f"127.0.0.1:{server.port}" in err, err
    assert "Traceback" not in err
    assert elapsed < 10


def test_connect_client_still_reaches_a_real_scheduler():
    """The handshake probe does not get in the way of a real (in-process) scheduler."""
    import distributed

    from sentvec.cluster import connect_client

    with distributed.LocalCluster(
        n_workers=0, processes=False, protocol="tcp", host="127.0.0.1", dashboard_address=None
    ) as cluster:
        with connect_client(cluster.scheduler_address, timeout=10) as client:
            assert client.scheduler_info()["address"] == cluster.scheduler_address
