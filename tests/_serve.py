"""Starting a real ``sentvec serve`` in a subprocess on a free 127.0.0.1 port (serve tests)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

SRC = str(Path(__file__).resolve().parents[1] / "src")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """``sentvec serve ARGS`` on a free port; ``url`` once /health answers 200."""

    def __init__(self, args: list[str], *, env: dict[str, str] | None = None, timeout: float = 180):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        full_env = {**os.environ, **(env or {})}
        full_env["PYTHONPATH"] = os.pathsep.join(p for p in (SRC, full_env.get("PYTHONPATH")) if p)
        full_env.setdefault("HF_HUB_OFFLINE", "1")
        full_env.setdefault("TRANSFORMERS_OFFLINE", "1")
        self.log = open(_log_path(self.port), "w+b")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "sentvec", "serve", *args, "--port", str(self.port)],
            env=full_env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited with {self.proc.returncode}:\n{self.output()}")
            try:
                if httpx.get(self.url + "/health", timeout=2).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"server not ready in {timeout} s:\n{self.output()}")
            time.sleep(0.2)

    def output(self) -> str:
        self.log.flush()
        self.log.seek(0)
        return self.log.read().decode("utf-8", "replace")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def _log_path(port: int) -> str:
    import tempfile

    return os.path.join(tempfile.gettempdir(), f"sentvec-serve-test-{port}.log")
