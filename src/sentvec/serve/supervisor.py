"""Running the server: the port bound before the models load, one process or a supervisor of
``--workers`` processes, a graceful stop on SIGTERM / Ctrl-C (:func:`run_server`, what
``sentvec serve`` runs).
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

from sentvec.serve.settings import ServeSettings

__all__ = ["run_server"]


def _quiet_reported_warnings() -> None:
    """The server reports truncation and zero vectors in each response; the encoders' own
    per-call warnings would flood the log."""
    import warnings

    for pattern in (
        r"\d+ of \d+ distinct sentences were longer than max_length",
        r"\d+ of \d+ sentences have no in-vocabulary word",
        r"\d+ of \d+ encoder vectors are all-zero",
    ):
        warnings.filterwarnings("ignore", message=pattern)


def _bind(host: str, port: int) -> Any:
    """A listening socket on ``host:port``, bound before anything loads (a port in use is
    reported at once)."""
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise OSError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def run_server(
    settings: ServeSettings,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    workers: int = 1,
    log_level: str = "info",
    access_log: bool = False,
) -> int:
    """Bind the port, then serve (answering 503 while the models load) until SIGTERM / Ctrl-C.

    What ``sentvec serve`` runs. With ``workers > 1`` a uvicorn supervisor runs that many
    server processes (each its own ``SO_REUSEPORT`` socket where the system has it), shares
    their Prometheus metrics through a run folder, and reports a model that none could load.

    Parameters
    ----------
    settings : ServeSettings
        The models and limits, checked (``ServeSettings.check``).
    host : str
        Address to bind; any other than the loopback is named on stderr with whether an API key
        guards it.
    port : int
        0: any free port.
    workers : int
        Server processes.
    log_level : {"critical", "error", "warning", "info", "debug"}
    access_log : bool
        Log every request (default: errors only).

    Returns
    -------
    int
        The exit status: 0 after a graceful stop, 1 when the models could not be loaded.

    Raises
    ------
    OSError
        The port cannot be bound.
    KeyboardInterrupt
        A second Ctrl-C stopped the server without waiting for the requests in flight.
    """
    import signal

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from sentvec.serve.settings import read_api_key

    api_key = read_api_key(settings.api_key_file)  # fail now on an unreadable key file
    sock = _bind(host, port)
    port = int(sock.getsockname()[1])  # --port 0: the port the system chose
    logging.basicConfig(level=log_level.upper(), format="sentvec serve: %(message)s")
    _quiet_reported_warnings()
    logging.getLogger("sentvec.serve").info(
        "listening on http://%s:%d; /health answers 503 until the models are loaded",
        host,
        port,
    )

    from sentvec.serve.http_limits import uvicorn_options

    common: dict[str, Any] = dict(
        host=host,
        port=port,
        log_level=log_level,
        access_log=access_log,
        server_header=False,
        **uvicorn_options(settings),
    )
    if host not in ("127.0.0.1", "localhost", "::1"):
        key_state = "an API key" if api_key else "NO API key"
        print(f"sentvec serve: listening on {host}, with {key_state}", file=sys.stderr)
    # uvicorn handles SIGTERM and SIGINT (Ctrl-C) alike: stop accepting, finish the requests
    # in flight; then it re-raises the signal, and a no-op handler lets the command end
    # normally (exit 0) instead of as interrupted. With --workers, the supervisor stops its
    # workers the same way
    graceful = (signal.SIGTERM, signal.SIGINT)
    previous = {sig: signal.signal(sig, lambda *_: None) for sig in graceful}
    forced = False
    try:
        if workers > 1:
            failed = _supervise_workers(sock, settings, workers, common)
        else:
            failed, forced = _serve_in_process(sock, settings, api_key, common)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        sock.close()
    if failed:
        print(f"sentvec serve: error: the models could not be loaded: {failed[0]}", file=sys.stderr)
        return 1
    if forced:
        # a second Ctrl-C: uvicorn stopped without waiting for the requests in flight
        raise KeyboardInterrupt
    return 0


def _serve_in_process(
    sock: Any, settings: ServeSettings, api_key: str | None, common: dict[str, Any]
) -> tuple[list[str], bool]:
    """Serve from this process until it stops: (the message of a model that could not be loaded,
    if any; whether a second Ctrl-C forced the stop)."""
    import uvicorn

    from sentvec.serve import create_app

    failed: list[str] = []
    server: Any = None

    def stop(message: str) -> None:
        failed.append(message)
        server.should_exit = True

    app = create_app(
        dict(settings.models),
        api_key=api_key,
        settings=settings,
        background=True,
        on_load_error=stop,
    )
    server = uvicorn.Server(uvicorn.Config(app, **common))
    server.run(sockets=[sock])
    return failed, bool(server.force_exit)


def _supervise_workers(
    sock: Any, settings: ServeSettings, workers: int, common: dict[str, Any]
) -> list[str]:
    """Run ``workers`` server processes under uvicorn's supervisor until it stops; the message of
    a model none of them could load, if any."""
    import shutil

    import uvicorn
    from uvicorn.supervisors import Multiprocess

    from sentvec._tempdirs import make_run_dir
    from sentvec.serve.app import LOAD_ERROR_FILE
    from sentvec.serve.listeners import per_worker_listener, reuse_port_available
    from sentvec.serve.metrics import MULTIPROC_ENV
    from sentvec.serve.settings import SETTINGS_ENV

    host, port = common["host"], common["port"]
    if reuse_port_available():
        # each worker binds a socket of its own and the kernel spreads the
        # connections over them; the port is free: the probe above just held it
        sock.close()
        try:
            sock = per_worker_listener(host, port)
        except OSError as exc:
            raise OSError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    # named after this supervisor (pid, start time): if it is killed, the next run
    # folder made in the temp directory removes this one
    run_dir = str(make_run_dir("serve"))
    try:
        os.mkdir(os.path.join(run_dir, "metrics"))
        os.environ[MULTIPROC_ENV] = os.path.join(run_dir, "metrics")
        settings.run_dir = run_dir
        os.environ[SETTINGS_ENV] = settings.to_json()
        config = uvicorn.Config(
            "sentvec.serve.app:app_from_environment",
            factory=True,
            workers=workers,
            **common,
        )
        Multiprocess(config, sockets=[sock]).run()  # what uvicorn.run does, on this socket
        error_file = os.path.join(run_dir, LOAD_ERROR_FILE)
        if os.path.exists(error_file):
            with open(error_file, encoding="utf-8") as f:
                return [f.read()]
        return []
    finally:
        sock.close()
        shutil.rmtree(run_dir, ignore_errors=True)
