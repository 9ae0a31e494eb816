"""Per-connection limits of the HTTP layer: the size of a request head and the time a client may
take to send its head and its body.

uvicorn's httptools protocol (what it runs when httptools is installed, as in the ``serve``
extra) bounds neither: llhttp keeps no header limit of its own, httptools gathers a header value
in memory however long it grows, and a connection that sends half a request head, or a body
that never ends, holds its place for ever. ``LimitedHttpToolsProtocol`` (made by
:func:`http_protocol`) adds the limits to that protocol, as nginx or Node.js have them:

* the request head (request line, header fields and the empty line that ends them) at most
  ``max_header_bytes`` bytes as received, whitespace included, and ``max_header_fields``
  fields: past either, **431** Request Header Fields Too Large and the connection is closed. A
  head that has not ended is cut off as soon as the bytes received for it pass the limit, so
  its memory is bounded by the limit plus one read (256 KiB);
* the head must arrive within ``header_timeout`` seconds of its first byte (of the connection's
  opening, for the first request), the body within ``body_timeout`` seconds of the end of the
  head: past either, **408** Request Timeout and the connection is closed (a connection that
  sent nothing is closed without an answer);
* an answer sent before the request's body has arrived (a refusal: 401, 413, 415, 503, ...)
  closes the connection instead of reading the rest of the body.

The head is measured on the wire, not from what the parser hands over (it strips the whitespace
around a value and reports neither the method nor the line ends): a read is fed to the parser in
segments that end where a head can end (at its first empty line: ``\\n\\r\\n`` or ``\\n\\n``;
the line ends before a request line, which the parser skips, are a segment of their own), so when
the parser reports a complete head, the bytes fed since the previous message ended are exactly
that head. A body with a ``Content-Length`` is fed as one segment of that length; a chunked body,
whose message also ends at an empty line, is cut at its empty lines too, at most 64 times per
read (a body of newlines would cost a parser call per two bytes), then fed whole. A request that
begins inside a segment fed as a body (pipelined in one read after a chunked body with more empty
lines than that) is counted from that segment's start: more than its head, never less.

The cost on the fast path is a few attribute updates, a search of each read for the end of a head
and two reads of the loop's clock per request; the one timer of a connection is re-armed only
when it fires, at most once per ``header_timeout`` while the connection is busy.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from sentvec.serve.errors import ApiError, error_payload
from sentvec.serve.settings import ServeSettings

__all__ = ["http_protocol", "uvicorn_options", "REFUSAL_SCOPE_KEY"]

#: Scope key set to the status (408) the connection layer answered for a request whose
#: application was already running; the application then counts that status, not a disconnect.
REFUSAL_SCOPE_KEY = "sentvec.refused"

log = logging.getLogger("sentvec.serve")

# where a connection is in its current request
_IDLE = 0  # between requests (uvicorn's keep-alive timeout applies)
_HEAD = 1  # receiving a request head (or waiting for the first one)
_BODY = 2  # receiving a request body

_REASONS = {408: b"Request Timeout", 431: b"Request Header Fields Too Large"}
_NOT_NEWLINE = re.compile(rb"[^\r\n]")
#: Segments a chunked body is cut into per read, at most (one parser call each).
_CHUNKED_CUTS = 64


if TYPE_CHECKING:  # the limits are checked against the protocol they extend
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol as _ProtocolBase
else:  # imported only by _make_protocol_class: it needs httptools
    _ProtocolBase = object


class _HttpLimits(_ProtocolBase):
    """The limits of the module docstring, placed before uvicorn's httptools protocol in the
    method resolution order of :func:`_make_protocol_class`'s class (``super()`` is that
    protocol)."""

    def __init__(
        self,
        config: Any,
        server_state: Any,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
        *,
        settings: ServeSettings,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self.max_header_bytes = int(settings.max_header_bytes)
        self.max_header_fields = int(settings.max_header_fields)
        self.header_timeout = float(settings.header_timeout)
        self.body_timeout = float(settings.body_timeout)
        self.url = b""
        self._phase = _HEAD
        self._head_bytes = 0  # bytes fed since the previous message ended
        self._body_left: int | None = None  # of a Content-Length body; None: chunked
        self._tail = b""  # the last two bytes fed (an empty line may span two reads)
        self._segment = 0  # length of the segment being fed
        self._segment_is_body = False  # whether it was fed as a body
        self._begun = False  # whether the parser has begun the current message
        self._deadline: float | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = 0.0

    # --- deadlines: one timer per connection, re-armed only when it fires ---------------

    def _set_deadline(self, deadline: float | None) -> None:
        self._deadline = deadline
        if deadline is None:
            return
        if self._timer is not None:
            if self._timer_at <= deadline:
                return  # fires first, then re-arms for this deadline
            self._timer.cancel()
        self._timer = self.loop.call_at(deadline, self._on_timer)
        self._timer_at = deadline

    def _on_timer(self) -> None:
        self._timer = None
        deadline = self._deadline
        if deadline is None or self.transport.is_closing():
            return
        now = self.loop.time()
        if now < deadline:
            self._timer = self.loop.call_at(deadline, self._on_timer)
            self._timer_at = deadline
            return
        if self.flow.read_paused:
            # the server holds the bytes back (a pipelined request waiting for its turn, a
            # body the application has not read yet): not the client's delay
            timeout = self.header_timeout if self._phase == _HEAD else self.body_timeout
            self._set_deadline(now + timeout)
            return
        if self._phase == _HEAD:
            if self._head_bytes == 0 and self.cycle is None:  # nothing sent: no answer
                self.transport.close()
                return
            self._refuse(
                408,
                f"the request head did not arrive within {self.header_timeout:g} s "
                "(--header-timeout)",
            )
        elif self._phase == _BODY:
            self._refuse(
                408,
                f"the request body did not arrive within {self.body_timeout:g} s (--body-timeout)",
            )

    def _refuse(self, status: int, message: str) -> None:
        """Answer ``status`` (if no other answer is under way) and close the connection."""
        cycle = self.cycle
        log.warning("%s: %s; connection closed (%d)", self._peer(), message, status)
        if cycle is not None and not cycle.response_complete:
            if cycle.response_started or self._phase != _BODY or self.pipeline:
                self.transport.close()  # an answer is being written: cut it off
                return
            # the application waits for this body: it sees a disconnect, and counts status
            cast(dict[str, Any], cycle.scope)[REFUSAL_SCOPE_KEY] = status
            cycle.disconnected = True
            cycle.message_event.set()
        path = self.url.split(b"?", 1)[0].decode("latin-1")
        body, _ = error_payload(ApiError(status, message), path)
        self.transport.write(
            b"".join(
                (
                    b"HTTP/1.1 %d %s\r\n" % (status, _REASONS[status]),
                    b"content-type: application/json\r\n",
                    b"content-length: %d\r\n" % len(body),
                    b"connection: close\r\n\r\n",
                    body,
                )
            )
        )
        self._phase = _IDLE
        self._deadline = None
        self.transport.close()

    # --- protocol and parser callbacks ---------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._set_deadline(self.loop.time() + self.header_timeout)

    def connection_lost(self, exc: Exception | None) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._deadline = None
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        size = len(data)
        pos = 0
        crlf = lf = -2  # where the next b"\n\r\n" and b"\n\n" are (-1: none; -2: not sought)
        chunked_cuts = _CHUNKED_CUTS
        while pos < size and not self.transport.is_closing():
            phase = self._phase
            body_left = self._body_left
            if phase == _BODY and body_left is not None:  # a Content-Length body
                end = min(size, pos + body_left)
                self._body_left = body_left - (end - pos)
            elif phase == _BODY and not chunked_cuts:
                end = size  # the rest, whole (see the module docstring)
            else:  # a head or a chunked body: both end at an empty line
                first = pos  # of the request line
                if phase != _BODY and not self._begun:
                    found = _NOT_NEWLINE.search(data, pos)
                    first = size if found is None else found.start()
                if first > pos:
                    # line ends before a request line, which the parser skips: not a head's end
                    end = first
                else:
                    if crlf == -2 or 0 <= crlf < pos:
                        crlf = data.find(b"\n\r\n", pos)
                    if lf == -2 or 0 <= lf < pos:
                        lf = data.find(b"\n\n", pos)
                    end = _empty_line_end(self._tail, data, pos, crlf, lf)
                if phase == _BODY:
                    chunked_cuts -= 1
            if phase == _IDLE:  # the first bytes of the next request
                self._phase = _HEAD
                self.url = b""
                self._set_deadline(self.loop.time() + self.header_timeout)
            if phase != _BODY:
                self._head_bytes += end - pos
            self._segment = end - pos
            self._segment_is_body = phase == _BODY
            self._tail = (self._tail + data[max(pos, end - 2) : end])[-2:]
            super().data_received(data[pos:end] if pos or end < size else data)
            pos = end
            if self._phase == _HEAD and not self.transport.is_closing():
                # the head has not ended: every byte fed for it so far belongs to it
                if self._head_bytes > self.max_header_bytes:
                    self._refuse(431, self._too_many_bytes())
                elif len(self.headers or ()) > self.max_header_fields:
                    self._refuse(431, self._too_many_fields())

    def on_message_begin(self) -> None:
        self._begun = True
        if self._segment_is_body:
            # begins inside a segment fed as a body: count the whole segment (an upper bound)
            self._head_bytes = self._segment
        if self._phase == _IDLE:
            self._phase = _HEAD
            self._set_deadline(self.loop.time() + self.header_timeout)
        super().on_message_begin()

    def on_headers_complete(self) -> None:
        self._phase = _BODY
        self._body_left = _content_length(self.headers)
        self._set_deadline(self.loop.time() + self.body_timeout)
        refusal = None
        if len(self.headers) > self.max_header_fields:
            refusal = self._too_many_fields()
        elif self._head_bytes > self.max_header_bytes:
            refusal = self._too_many_bytes()
        if refusal is None:
            super().on_headers_complete()
            return
        log.warning("%s: %s; connection closed (431)", self._peer(), refusal)
        app = self.app
        self.app = _refusal_app(431, refusal)  # answered through uvicorn's own cycle
        try:
            super().on_headers_complete()
        finally:
            self.app = app

    def on_message_complete(self) -> None:
        self._phase = _IDLE
        self._begun = False
        self._head_bytes = 0
        self._deadline = None
        super().on_message_complete()

    def on_response_complete(self) -> None:
        if (
            self._phase == _BODY
            and self.cycle.response_complete  # the answer to the request being received
            and not self.transport.is_closing()
        ):
            # answered before its body arrived (a refusal): do not read the rest of it
            self._phase = _IDLE
            self._deadline = None
            self.transport.close()
        super().on_response_complete()

    def _peer(self) -> str:
        return f"{self.client[0]}:{self.client[1]}" if self.client else "a client"

    def _too_many_bytes(self) -> str:
        return (
            "the request head (request line and header fields) exceeds this server's "
            f"limit of {self.max_header_bytes} bytes (--max-header-bytes)"
        )

    def _too_many_fields(self) -> str:
        return (
            f"the request has more than {self.max_header_fields} header fields, this "
            "server's limit (--max-header-fields)"
        )


def _make_protocol_class() -> Callable[..., asyncio.Protocol]:
    """The protocol class, built on uvicorn's httptools protocol (imported only here: it needs
    httptools)."""
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    class LimitedHttpToolsProtocol(_HttpLimits, HttpToolsProtocol):
        """uvicorn's httptools protocol with the limits of the module docstring."""

    return LimitedHttpToolsProtocol


def _empty_line_end(tail: bytes, data: bytes, pos: int, crlf: int, lf: int) -> int:
    """Where the first empty line in ``data[pos:]`` ends (``len(data)`` if none): the first place
    a head or a chunked message can end. ``tail`` is the two bytes before ``data[pos]``; ``crlf``
    and ``lf`` are the first ``b"\\n\\r\\n"`` and ``b"\\n\\n"`` at or after ``pos`` (-1: none)."""
    first = data[pos : pos + 2]
    if tail.endswith(b"\n") and (first[:1] == b"\n" or first == b"\r\n"):
        return pos + (1 if first[:1] == b"\n" else 2)
    if tail == b"\n\r" and first[:1] == b"\n":
        return pos + 1
    ends = [i + n for i, n in ((crlf, 3), (lf, 2)) if i >= 0]
    return min(ends) if ends else len(data)


def _content_length(headers: list[tuple[bytes, bytes]]) -> int | None:
    """The length of a request's body from its (parsed, lower-case) header fields; ``None`` for
    a chunked body (``Transfer-Encoding``), 0 for none."""
    length = 0
    for name, value in headers:
        if name == b"transfer-encoding":
            return None
        if name == b"content-length" and value.strip().isdigit():
            length = int(value)
    return length


def _refusal_app(status: int, message: str) -> Any:
    """An ASGI application answering every request with ``status`` and ``Connection: close``."""

    async def refuse(scope: dict[str, Any], receive: Any, send: Any) -> None:
        body, _ = error_payload(ApiError(status, message), scope.get("path", ""))
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"connection", b"close"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})

    return refuse


@functools.cache
def _protocol_class() -> Callable[..., asyncio.Protocol]:
    return _make_protocol_class()


def _create(settings: ServeSettings, **kwargs: Any) -> asyncio.Protocol:
    return _protocol_class()(settings=settings, **kwargs)


def http_protocol(settings: ServeSettings) -> Any:
    """uvicorn's ``http`` argument enforcing ``settings``' limits on every connection.

    Parameters
    ----------
    settings : ServeSettings
        Its ``max_header_bytes``, ``max_header_fields``, ``header_timeout`` and
        ``body_timeout`` are enforced.

    Returns
    -------
    callable or str
        A protocol factory for ``uvicorn.Config(app, http=...)`` (it pickles, so ``--workers``
        processes receive it); ``"h11"`` when httptools is not installed, with a warning: h11
        then bounds the head by ``h11_max_incomplete_event_size`` (answered 400) and nothing
        bounds the time a client takes (see :func:`uvicorn_options`).
    """
    try:
        import httptools  # noqa: F401
    except ImportError:
        log.warning(
            "httptools is not installed: --header-timeout and --body-timeout are not "
            "enforced (pip install 'sentvec[serve]')"
        )
        return "h11"
    return functools.partial(_create, settings)


def uvicorn_options(settings: ServeSettings) -> dict[str, Any]:
    """The ``uvicorn.Config`` options that enforce ``settings``' HTTP limits.

    Parameters
    ----------
    settings : ServeSettings

    Returns
    -------
    dict
        ``http`` (see :func:`http_protocol`), ``h11_max_incomplete_event_size`` (the head
        limit, for when uvicorn runs h11) and ``ws="none"``: the server has no WebSocket
        route, and a connection handed to a WebSocket protocol would leave these limits.
    """
    return {
        "http": http_protocol(settings),
        "h11_max_incomplete_event_size": int(settings.max_header_bytes),
        "ws": "none",
    }
