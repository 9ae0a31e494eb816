"""One listening socket per worker process (``SO_REUSEPORT``), for ``sentvec serve --workers N``.

uvicorn's supervisor hands every worker the same listening socket. Each worker's event loop then
accepts from one shared queue, and whichever loop wakes first takes the connections that
arrive together: the keep-alive connections of a client can all land on one worker while the
other idles. On Linux, sockets bound to one address with ``SO_REUSEPORT`` each get their own
accept queue, and the kernel gives every new connection to one of them by a hash of its
addresses (what nginx's ``listen ... reuseport`` does). :class:`PerWorkerListener` gives each
worker such a socket of its own through uvicorn's own supervisor: the supervisor pickles its
sockets for every worker it spawns (and respawns), and this socket pickles as "bind a new
``SO_REUSEPORT`` socket to my address", so the worker binds its own and uvicorn listens on it
once the worker has started. The supervisor's copy stays bound but never listens: it keeps the
port while workers come and go, and gets no connections (only listening sockets share them).

Elsewhere (macOS and the BSDs give ``SO_REUSEPORT`` other meanings) :func:`reuse_port_available`
is false and the workers share one socket, as uvicorn does by default.
"""

from __future__ import annotations

import socket
import sys
from typing import Any

__all__ = ["PerWorkerListener", "reuse_port_available", "per_worker_listener"]


def reuse_port_available() -> bool:
    """Whether workers can have a listening socket each, balanced by the kernel (Linux)."""
    return sys.platform.startswith("linux") and hasattr(socket, "SO_REUSEPORT")


def _reuse_port_socket(family: int, address: Any, cls: type = socket.socket) -> socket.socket:
    """A TCP socket bound to ``address`` with ``SO_REUSEADDR`` and ``SO_REUSEPORT``, not
    listening yet."""
    sock = cls(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind(address)
    except BaseException:
        sock.close()
        raise
    return sock


def _bind_in_worker(family: int, address: Any) -> socket.socket:
    """Unpickling a :class:`PerWorkerListener` in a worker: its own socket on the same address.

    A worker that cannot bind exits with uvicorn's start-up failure status, so the supervisor
    stops instead of respawning it (the next one would fail alike).
    """
    try:
        return _reuse_port_socket(family, address)
    except OSError as exc:
        print(
            f"sentvec serve: worker cannot listen on {address[0]}:{address[1]}: "
            f"{exc.strerror or exc}",
            file=sys.stderr,
            flush=True,
        )
        from uvicorn.config import STARTUP_FAILURE

        raise SystemExit(STARTUP_FAILURE) from None


class PerWorkerListener(socket.socket):
    """A socket bound with ``SO_REUSEPORT`` that pickles as a new socket bound to the same
    address: each worker process that receives it binds its own (see the module docstring)."""

    def __reduce_ex__(self, protocol: Any) -> tuple[Any, ...]:
        return _bind_in_worker, (int(self.family), self.getsockname())


def per_worker_listener(host: str, port: int) -> PerWorkerListener:
    """The supervisor's socket for ``host:port``: bound with ``SO_REUSEPORT``, not listening.

    Raises
    ------
    OSError
        The address cannot be bound (in use by a socket without ``SO_REUSEPORT``, or by
        another user).
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = _reuse_port_socket(family, (host, port), PerWorkerListener)
    assert isinstance(sock, PerWorkerListener)
    return sock
