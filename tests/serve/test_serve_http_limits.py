"""``sentvec serve`` at its HTTP edges, against a real server process over raw sockets: the size
and count of request headers (431), the time a client may take to send its head and its body
(408), connections closed after a refusal, a client leaving in the middle of its body, the
content type of a body (415), the auth scheme's case, and Ctrl-C (SIGINT) with one worker and
with two."""

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

BIN = Path(__file__).parents[1] / "data" / "sent2vec-reference" / "tiny-bigram.bin"
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
        *["--max-header-bytes", str(MAX_HEADER_BYTES)],
        *["--max-header-fields", str(MAX_HEADER_FIELDS)],
        *["--header-timeout", str(TIMEOUT_S), "--body-timeout", str(TIMEOUT_S)],
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


def test_a_header_value_streamed_past_the_limit_is_431_and_cut_off(server):
    """Before: accepted whole (32 MiB stalled every other client) and answered 200."""
    sock = _connect(server.url)
    sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nX-Long: ")
    sent, total = 0, 32 << 20  # more than the sockets' buffers on both sides hold
    try:
        while sent < total:
            sock.sendall(b"a" * 65536)
            sent += 65536
        sock.sendall(b"\r\n\r\n")
    except OSError:  # the server closed the connection: what a bounded head means
        pass
    response = _read_all(sock)
    sock.close()
    assert _status(response) == 431
    assert b"connection: close" in response.lower()
    assert b"--max-header-bytes" in response
    assert sent < total  # cut off long before the client was done


def test_a_complete_head_over_the_limit_is_431(server):
    sock = _connect(server.url)
    pad = b"X-Pad: " + b"p" * (MAX_HEADER_BYTES + 10) + b"\r\n"
    sock.sendall(b"GET /v1/models HTTP/1.1\r\nHost: x\r\n" + pad + b"\r\n")
    response = _read_all(sock)
    assert _status(response) == 431
    body = response.split(b"\r\n\r\n", 1)[1]
    assert b'"error":{"message"' in body  # /v1/...: OpenAI's rendering
    # a head just under the limit is served
    r = httpx.get(server.url + "/health", headers={"X-Pad": "p" * (MAX_HEADER_BYTES - 300)})
    assert r.status_code == 200


def _head(size: int, pad: bytes = b"p", target: bytes = b"/health") -> bytes:
    """A GET head of exactly ``size`` bytes on the wire, padded with ``pad`` bytes in a value."""
    start = b"GET " + target + b" HTTP/1.1\r\nHost: x\r\nX-Pad: v"
    end = b"\r\n\r\n"
    head = start + pad * (size - len(start) - len(end)) + end
    assert len(head) == size
    return head


def _send(sock: socket.socket, data: bytes, streamed: bool) -> None:
    """``data`` in one write, or streamed in small writes (the server reads it in many pieces)."""
    if not streamed:
        sock.sendall(data)
        return
    for i in range(0, len(data), 997):
        sock.sendall(data[i : i + 997])
        time.sleep(0.0005)


@pytest.mark.parametrize("streamed", [False, True], ids=["one-read", "streamed"])
@pytest.mark.parametrize("pad", [b"p", b" "], ids=["letters", "spaces"])
def test_the_head_limit_is_its_size_on_the_wire(server, pad, streamed):
    """The limit counts every byte of the head as sent (request line, whitespace around values,
    the final empty line): a head of exactly the limit is served, one byte more is 431."""
    for size, status in ((MAX_HEADER_BYTES, 200), (MAX_HEADER_BYTES + 1, 431)):
        sock = _connect(server.url)
        _send(sock, _head(size, pad), streamed)
        response = sock.recv(65536)
        sock.close()
        assert _status(response) == status, (size, response[:200])


@pytest.mark.parametrize("streamed", [False, True], ids=["one-read", "streamed"])
def test_whitespace_padding_a_value_counts_toward_the_head_limit(server, streamed):
    """The parser strips the spaces around a value: 100,000 of them still make a 431."""
    sock = _connect(server.url)
    try:
        _send(
            sock,
            b"GET /health HTTP/1.1\r\nHost: x\r\nX: v" + b" " * 100_000 + b"\r\n\r\n",
            streamed,
        )
    except OSError:  # closed by the server once the head passed the limit
        pass
    response = _read_all(sock)
    sock.close()
    assert _status(response) == 431


def test_pipelined_heads_are_measured_one_by_one(server):
    """Requests sent together in one write, after a body: each head is measured alone, exactly
    (neither the body before it nor the requests around it count)."""
    body = b'{"input": "a"}' + b" " * 2000
    post = (
        b"POST /v1/embeddings HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n" % len(body)
    ) + body
    at_limit = _head(MAX_HEADER_BYTES, b" ")
    sock = _connect(server.url)
    sock.sendall(post + at_limit + at_limit + _head(MAX_HEADER_BYTES + 1, b" "))
    response = _read_all(sock)
    sock.close()
    statuses = [int(m) for m in re.findall(rb"HTTP/1\.1 (\d{3}) ", response)]
    assert statuses == [200, 200, 200, 431]


def test_a_request_pipelined_after_a_chunked_body_is_served(server):
    """A chunked body is fed to the parser whole: a request sent behind it in the same write is
    counted from the body's start (more than its head, never less) and served."""
    body = b'{"input": "a\\n\\nb"}'
    chunked = (
        b"POST /v1/embeddings HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
    )
    sock = _connect(server.url)
    sock.sendall(chunked + _head(1000) + _head(MAX_HEADER_BYTES + 1))
    response = _read_all(sock)
    sock.close()
    statuses = [int(m) for m in re.findall(rb"HTTP/1\.1 (\d{3}) ", response)]
    assert statuses == [200, 200, 431]


def test_too_many_header_fields_is_431(server):
    fields = {f"X-F{i}": "v" for i in range(MAX_HEADER_FIELDS + 5)}
    r = httpx.get(server.url + "/health", headers=fields)
    assert r.status_code == 431
    assert "--max-header-fields" in r.json()["error"]
    few = {f"X-F{i}": "v" for i in range(MAX_HEADER_FIELDS - 8)}
    assert httpx.get(server.url + "/health", headers=few).status_code == 200


def test_a_head_that_never_ends_is_408_after_the_header_timeout(server):
    sock = _connect(server.url)
    t0 = time.monotonic()
    sock.sendall(b"POST /embed HTTP/1.1\r\nHost: x\r\n")
    response = _read_all(sock)
    waited = time.monotonic() - t0
    sock.close()
    assert _status(response) == 408
    assert b"--header-timeout" in response
    assert TIMEOUT_S - 0.1 <= waited <= TIMEOUT_S + SLACK_S


def test_a_connection_that_sends_nothing_is_closed(server):
    sock = _connect(server.url)
    t0 = time.monotonic()
    assert _read_all(sock) == b""
    assert time.monotonic() - t0 <= TIMEOUT_S + SLACK_S
    sock.close()


def test_a_body_that_never_ends_is_408_and_counted_as_408(server):
    before = _metric(httpx.get(server.url + "/metrics").text, "408")
    sock = _connect(server.url)
    sock.sendall(
        b"POST /embed HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: 1000\r\n\r\n" + b'{"inputs": "'
    )
    response = _read_all(sock)
    sock.close()
    assert _status(response) == 408
    assert b"--body-timeout" in response
    assert b'"error_type"' in response  # /embed: TEI's rendering
    deadline = time.monotonic() + SLACK_S
    while _metric(httpx.get(server.url + "/metrics").text, "408") < before + 1:
        assert time.monotonic() < deadline, "the 408 was not counted"
        time.sleep(0.05)


def test_a_413_for_the_body_size_closes_the_connection(server):
    sock = _connect(server.url)
    sock.sendall(
        b"POST /v1/embeddings HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n" % (MAX_REQUEST_BYTES + 1) + b'{"input": "'
    )
    response = _read_all(sock)  # ends: the server closed the connection
    sock.close()
    assert _status(response) == 413
    assert b"connection: close" in response.lower()


def test_a_refusal_before_the_body_closes_the_connection(server):
    """415 is answered before the body is read: the connection is closed at once, not kept
    until the body timeout (which would add a 408 after the 415)."""
    sock = _connect(server.url)
    sock.sendall(
        b"POST /embed HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\n"
        b"Content-Length: 5000\r\n\r\n" + b'{"inputs": "'
    )
    response = _read_all(sock)
    sock.close()
    assert _status(response) == 415
    assert response.count(b"HTTP/1.1 ") == 1, response


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


def test_bearer_scheme_is_case_insensitive():
    from sentvec.serve.security import bearer_credentials

    for value in (b"Bearer k", b"bearer k", b"BEARER k", b"bEaReR   k"):
        assert bearer_credentials(value) == b"k"
    for value in (b"k", b"Basic k", b"Bearerk", b"", b"Bearer"):
        assert bearer_credentials(value) == b""


def _children(pid: int) -> list[int]:
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


@pytest.mark.parametrize("workers", [1, 2])
def test_ctrl_c_drains_the_requests_in_flight_and_exits_0(workers):
    """SIGINT to every process of the server, as a terminal's Ctrl-C sends it, while a request
    is in flight: the request is answered, and the server exits 0 (before: 130 with one
    worker). The workers' connections have the HTTP limits too."""
    with start_server(str(BIN), "--workers", str(workers)) as srv:
        # every worker enforces the HTTP limits (the default head limit: 16 KiB)
        for _ in range(4):
            r = httpx.get(srv.url + "/health", headers={"X-Pad": "p" * 20000})
            assert r.status_code == 431
        sock = _connect(srv.url)
        body = b'{"inputs": "a sentence in flight"}'
        sock.sendall(
            b"POST /embed HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Expect: 100-continue\r\nContent-Length: %d\r\n\r\n" % len(body)
        )
        # the server says 100 Continue when the handler starts reading the body: in flight
        interim = b""
        while not interim.endswith(b"\r\n\r\n"):
            interim += sock.recv(1)
        assert interim == b"HTTP/1.1 100 Continue\r\n\r\n"
        for pid in [srv.proc.pid, *_children(srv.proc.pid)]:
            try:
                os.kill(pid, signal.SIGINT)
            except ProcessLookupError:
                pass
        time.sleep(0.3)
        sock.sendall(body)
        response = _read_all(sock)
        sock.close()
        assert _status(response) == 200
        assert srv.proc.wait(60) == 0, srv.output()[-3000:]
        assert "Traceback" not in srv.output()


@pytest.mark.parametrize(
    "field,value",
    [
        ("header_timeout", 0),
        ("body_timeout", -1),
        ("body_timeout", float("nan")),
        ("header_timeout", float("inf")),
        ("max_header_bytes", 0),
        ("max_header_fields", 0),
    ],
)
def test_http_limits_are_checked(field, value):
    from sentvec.serve import ServeSettings

    with pytest.raises(ValueError, match=field):
        ServeSettings(**{field: value}).check()


def test_without_httptools_uvicorn_runs_h11_with_the_head_limit(monkeypatch, caplog):
    import sys

    from sentvec.serve import ServeSettings, uvicorn_options

    settings = ServeSettings(max_header_bytes=1234)
    options = uvicorn_options(settings)
    assert callable(options["http"])  # the limited httptools protocol
    monkeypatch.setitem(sys.modules, "httptools", None)  # import httptools: ImportError
    with caplog.at_level("WARNING", logger="sentvec.serve"):
        options = uvicorn_options(settings)
    assert options == {"http": "h11", "h11_max_incomplete_event_size": 1234, "ws": "none"}
    assert "--header-timeout and --body-timeout are not enforced" in caplog.text
