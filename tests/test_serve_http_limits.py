"""``sentvec serve`` at its HTTP edges, against a real server process over raw sockets: a client
leaving in the middle of its body, the content type of a body (415), and Ctrl-C (SIGINT) with
one worker and with two."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
httpx = pytest.importorskip("httpx")

from sentvec.serve import start_server  # noqa: E402

BIN = Path(__file__).parent / "data" / "sent2vec-reference" / "tiny-bigram.bin"
MAX_HEADER_BYTES = 4096
MAX_HEADER_FIELDS = 20
TIMEOUT_S = 1.5  # --header-timeout and --body-timeout of the module's server
MAX_REQUEST_BYTES = 100_000
#: Generous bound on how long after its deadline a server closes a connection (a busy machine).
SLACK_S = 20.0


@pytest.fixture(scope="module")
def server():
    with start_server(
        *[str(BIN), "--name", "s2v"],
        *["--max-request-bytes", str(MAX_REQUEST_BYTES)],
    ) as srv:
        yield srv


def _connect(url: str) -> socket.socket:
    host, port = url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=TIMEOUT_S + SLACK_S)
    return sock


def _read_all(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection (bounded by the timeout)."""
    parts = []
    while True:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            break
        if not chunk:
            break
        parts.append(chunk)
    return b"".join(parts)


def _status(response: bytes) -> int:
    match = re.match(rb"HTTP/1\.1 (\d{3}) ", response)
    assert match, response[:200]
    return int(match.group(1))


def _metric(text: str, status: str, route: str = "/embed") -> float:
    total = 0.0
    for line in text.splitlines():
        if (
            line.startswith("sentvec_requests_total{")
            and f'route="{route}"' in line
            and f'status="{status}"' in line
        ):
            total += float(line.rsplit(" ", 1)[1])
    return total


def test_a_client_leaving_during_its_body_is_499_not_500(server):
    before = httpx.get(server.url + "/metrics").text
    sock = _connect(server.url)
    sock.sendall(
        b"POST /embed HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: 5000\r\n\r\n" + b'{"inputs": "' + b"a " * 100
    )
    time.sleep(0.2)  # the handler is reading the body
    sock.close()
    deadline = time.monotonic() + SLACK_S
    while True:
        after = httpx.get(server.url + "/metrics").text
        if _metric(after, "499") >= _metric(before, "499") + 1:
            break
        assert time.monotonic() < deadline, "the disconnect was not counted as 499"
        time.sleep(0.05)
    assert _metric(after, "500") == _metric(before, "500")
    log = server.output()
    assert "while sending its body" in log
    assert "unexpected error" not in log and "Traceback" not in log


@pytest.mark.parametrize(
    "content_type", [None, "text/plain", "application/x-www-form-urlencoded", "text/json"]
)
@pytest.mark.parametrize("route", ["/embed", "/v1/embeddings"])
def test_a_body_not_declared_json_is_415(server, route, content_type):
    """A browser sends these cross-origin without a preflight: they must not make it encode."""
    body = b'{"inputs": "hello"}' if route == "/embed" else b'{"input": "hello"}'
    headers = {} if content_type is None else {"content-type": content_type}
    r = httpx.post(server.url + route, content=body, headers=headers)
    assert r.status_code == 415
    message = r.json()["error"] if route == "/embed" else r.json()["error"]["message"]
    assert "application/json" in message


@pytest.mark.parametrize(
    "content_type,status",
    [
        ("application/json", 200),
        ("Application/JSON; charset=UTF-8", 200),
        ('application/json; charset="utf-8"', 200),
        ("application/json; charset=latin-1", 415),
    ],
)
def test_json_content_type_parameters(server, content_type, status):
    r = httpx.post(
        server.url + "/embed",
        content=b'{"inputs": "hello"}',
        headers={"content-type": content_type},
    )
    assert r.status_code == status


def _children(pid: int) -> list[int]:
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


@pytest.mark.parametrize("workers", [1, 2])
def test_ctrl_c_drains_the_requests_in_flight_and_exits_0(workers):
    """SIGINT to every process of the server, as a terminal's Ctrl-C sends it, while a request
    is in flight: the request is answered, and the server exits 0 (before: 130 with one
    worker)."""
    with start_server(str(BIN), "--workers", str(workers)) as srv:
        sock = _connect(srv.url)
        body = b'{"inputs": "a sentence in flight"}'
        sock.sendall(
            b"POST /embed HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n" % len(body) + body[:10]
        )
        time.sleep(0.3)  # the request is accepted and its handler reads the body
        for pid in [srv.proc.pid, *_children(srv.proc.pid)]:
            try:
                os.kill(pid, signal.SIGINT)
            except ProcessLookupError:
                pass
        time.sleep(0.3)
        sock.sendall(body[10:])
        response = _read_all(sock)
        sock.close()
        assert _status(response) == 200
        assert srv.proc.wait(60) == 0, srv.output()[-3000:]
        assert "Traceback" not in srv.output()
