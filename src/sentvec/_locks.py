"""Exclusive locks on output directories being written (:class:`DirectoryLock`)."""

from __future__ import annotations

import contextlib
import json
import os
from datetime import UTC
from pathlib import Path
from typing import Any

from sentvec.exceptions import DirectoryLockedError

#: Name of the lock file :class:`DirectoryLock` keeps in a directory being written.
LOCK_NAME = ".sentvec.lock"


class DirectoryLock:
    """An exclusive lock on a directory being written, held by one process at a time.

    The lock is ``fcntl.flock`` on ``<directory>/.sentvec.lock``, which records the holder
    (pid, host, start time) for the refusal message. The kernel releases a ``flock`` when its
    process dies (``kill -9`` included), so a lock file left by a dead run is stale by
    construction and is simply taken over (no pid guessing; a reused pid cannot fool it). On
    network file systems that do not share ``flock`` between hosts, it excludes only writers on
    the same host.

    Use as a context manager; the lock file is removed on release.

    Raises
    ------
    DirectoryLockedError
        (an ``OSError``) On entry, if another live process holds the lock; the message names its
        pid, host and start time.
    """

    def __init__(self, directory: str | os.PathLike[str], *, what: str = "directory") -> None:
        self.directory = Path(directory)
        self.path = self.directory / LOCK_NAME
        self.what = what
        self._fd: int | None = None

    def holder(self) -> dict[str, Any] | None:
        """The holder recorded in the lock file (None when absent or unreadable)."""
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def acquire(self) -> DirectoryLock:
        import fcntl
        import socket
        from datetime import datetime

        if self._fd is not None:
            raise RuntimeError("lock already held")
        for _ in range(100):  # retried only when the file was replaced under us
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                h = self.holder() or {}
                raise DirectoryLockedError(
                    f"{self.what} {str(self.directory)!r} is being written by another process "
                    f"(pid {h.get('pid', '?')} on host {h.get('host', '?')}, since "
                    f"{h.get('started', '?')}); wait for it to finish or choose another "
                    f"directory (lock file {str(self.path)!r})"
                ) from None
            try:
                same = os.fstat(fd).st_ino == os.stat(self.path).st_ino
            except FileNotFoundError:
                same = False
            if not same:  # the previous holder removed the file between our open and flock
                os.close(fd)
                continue
            info = {
                "pid": os.getpid(),
                "host": socket.gethostname(),
                "started": datetime.now(UTC).isoformat(timespec="seconds"),
            }
            os.ftruncate(fd, 0)
            os.write(fd, (json.dumps(info) + "\n").encode("utf-8"))
            self._fd = fd
            return self
        raise DirectoryLockedError(f"could not lock {str(self.directory)!r}")  # pragma: no cover

    def release(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)  # while still locked: a waiting opener sees a new inode
        os.close(fd)

    def __enter__(self) -> DirectoryLock:
        return self.acquire()

    def __exit__(self, *exc: Any) -> None:
        self.release()
