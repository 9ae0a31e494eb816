"""Start a server in a subprocess on a free 127.0.0.1 port and wait until it is ready.

:func:`start_server` runs ``sentvec serve`` (tests, benchmarks, notebooks); :class:`ServerProcess`
runs any HTTP server command the same way (a benchmark's peers). The wait is bounded, polls
``/health`` on new connections until every worker process has answered 200 (``sentvec serve``
names the worker that answered in :data:`WORKER_HEADER`), and fails at once with the server's
own output if the process exits.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

__all__ = ["ServerProcess", "start_server", "free_port", "WORKER_HEADER"]

#: Header of every ``/health`` answer of ``sentvec serve``: the process id of the worker that
#: answered. With ``--workers N`` each worker answers for itself: a 200 says that this worker
#: has loaded its models, not that the others have.
WORKER_HEADER = "X-Sentvec-Worker"

_SRC = str(Path(__file__).resolve().parents[2])  # the directory holding the sentvec package


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port free on ``host`` now (the OS picks it)."""
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _health_status(url: str) -> tuple[int | None, str | None]:
    """``GET url`` on a new connection: its status code (None when nothing answers) and its
    :data:`WORKER_HEADER` (None when absent)."""
    try:
        with urllib.request.urlopen(url, timeout=2) as r:  # noqa: S310 - 127.0.0.1 only
            return int(r.status), r.headers.get(WORKER_HEADER)
    except urllib.error.HTTPError as exc:
        return int(exc.code), exc.headers.get(WORKER_HEADER)
    except (OSError, ValueError):
        return None, None


class ServerProcess:
    """An HTTP server command running on 127.0.0.1; a context manager that stops it.

    Parameters
    ----------
    argv : sequence of str
        The command; ``{PORT}`` in any argument is replaced by the chosen port.
    port : int, optional
        Default: a free port.
    env : mapping, optional
        Added to this process's environment (which keeps ``HF_HUB_OFFLINE`` and
        ``TRANSFORMERS_OFFLINE`` set to 1 unless it says otherwise).
    health_path : str, default "/health"
        Polled, each time on a new connection, until it answers 200.
    workers : int, default 1
        Worker processes that must each answer 200, told apart by :data:`WORKER_HEADER`: with
        ``--workers N`` a connection reaches one worker, which answers for itself (503 while it
        loads its models), and a worker that has not started listening gets no connections at
        all, so no number of 200s in a row from the others says it is ready. A server that
        sends no such header is ready at its first 200.
    timeout : float, default 180
        Seconds to wait for readiness.
    wait : bool, default True
        Wait now; else call :meth:`wait_ready` later (start several servers, then wait).

    Attributes
    ----------
    url : str
        ``http://127.0.0.1:PORT``.
    proc : subprocess.Popen
        The process (stdout and stderr go to a temporary log, see :meth:`output`).

    Raises
    ------
    RuntimeError
        The process exited, or was not ready in ``timeout`` seconds (it is then stopped); the
        message ends with its output.
    """

    def __init__(
        self,
        argv: Sequence[str],
        *,
        port: int | None = None,
        env: Mapping[str, str] | None = None,
        health_path: str = "/health",
        timeout: float = 180.0,
        wait: bool = True,
        workers: int = 1,
    ) -> None:
        self.port = int(port) if port is not None else free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.health_url = self.url + health_path
        self.timeout = float(timeout)
        self.workers = max(1, int(workers))
        full = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", **os.environ, **(env or {})}
        self.argv = [a.replace("{PORT}", str(self.port)) for a in argv]
        self._log: IO[bytes] = tempfile.TemporaryFile(prefix="sentvec-server-")
        self._started = time.monotonic()
        self.proc = subprocess.Popen(
            self.argv, env=full, stdout=self._log, stderr=subprocess.STDOUT
        )
        if wait:
            self.wait_ready()

    def wait_ready(self) -> ServerProcess:
        """Block until ``/health`` has answered 200 from ``workers`` different workers (at most
        ``timeout`` seconds from the start)."""
        deadline = self._started + self.timeout
        ready: set[str] = set()
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"{' '.join(self.argv[:5])} exited with {self.proc.returncode}:\n"
                    + self.output()[-4000:]
                )
            status, worker = _health_status(self.health_url)
            if status == 200:
                if worker is None:
                    return self
                ready.add(worker)
                if len(ready) >= self.workers:
                    return self
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(
                    f"{' '.join(self.argv[:5])} not ready in {self.timeout:.0f} s:\n"
                    + self.output()[-4000:]
                )
            time.sleep(0.01 if status == 200 else 0.1)  # a 200: the next try may reach another

    def output(self) -> str:
        """What the process printed so far (stdout and stderr)."""
        self._log.flush()
        self._log.seek(0)
        return self._log.read().decode("utf-8", "replace")

    def stop(self, timeout: float = 30.0) -> int:
        """SIGTERM, then SIGKILL after ``timeout`` seconds; returns the exit code."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return int(self.proc.returncode)

    def close(self) -> None:
        """Stop the process and drop its log."""
        self.stop()
        self._log.close()

    def __enter__(self) -> ServerProcess:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def start_server(
    *args: str,
    port: int | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = 180.0,
    wait: bool = True,
) -> ServerProcess:
    """``sentvec serve ARGS --port PORT`` in a subprocess on 127.0.0.1, once ready.

    Parameters
    ----------
    *args : str
        ``sentvec serve`` arguments: models and options, without ``--port``/``--host``.
    port, env, timeout, wait
        As :class:`ServerProcess`. The subprocess imports this same sentvec (its source
        directory leads ``PYTHONPATH``). With ``--workers N`` it is ready when ``/health`` has
        answered 200 from each of the N workers (:data:`WORKER_HEADER`), so that every worker
        has loaded its models.

    Returns
    -------
    ServerProcess
        Use it as a context manager, or call :meth:`ServerProcess.close`.

    Raises
    ------
    RuntimeError
        The server exited or was not ready in time (with its output).

    Examples
    --------
    >>> with start_server("minilm") as srv:  # doctest: +SKIP
    ...     httpx.post(srv.url + "/embed", json={"inputs": "hello"})
    """
    pythonpath = os.pathsep.join(
        p for p in (_SRC, (env or {}).get("PYTHONPATH", os.environ.get("PYTHONPATH"))) if p
    )
    workers = 1
    for flag, value in zip(args, args[1:], strict=False):
        if flag == "--workers" and value.isdigit():
            workers = int(value)
    for arg in args:  # the --workers=N spelling
        if arg.startswith("--workers=") and arg[10:].isdigit():
            workers = int(arg[10:])
    return ServerProcess(
        [
            sys.executable,
            "-m",
            "sentvec",
            "serve",
            *args,
            "--host",
            "127.0.0.1",
            "--port",
            "{PORT}",
        ],
        port=port,
        env={**(env or {}), "PYTHONPATH": pythonpath},
        timeout=timeout,
        wait=wait,
        workers=workers,
    )
