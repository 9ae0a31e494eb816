"""What a killed process leaves behind, removed by the next run: run folders, and the temporary
files of the atomic writers (``sentvec._io.make_temp``).

Both names record their owner: the pid, the process's start time and the host
(:func:`owner_tag`); :func:`remove_dead_entries` removes the entries of a folder whose owner is
dead, by one rule for both (:func:`owner_alive`).

A run folder is ``<parent>/sentvec-<purpose>-<pid>-<start>-<host tag>-<random>`` (default
parent: the system temp directory). Its name records its owner: the pid, the process's start
time (``/proc/<pid>/stat`` field 22, clock ticks since boot; 0 where there is no ``/proc``) and
the host (:func:`host_tag`). Every :func:`make_run_dir` first removes the folders
of ``parent`` whose owner is dead (:func:`remove_dead_run_dirs`), whatever their purpose: what a
run killed with ``kill -9`` (or a crash, a power cut: the cases no handler covers) leaves is
removed by the next run that makes a run folder there. The start time tells a dead owner from a
new process that was given its pid, so a reused pid does not keep a dead run's folder; folders
of live owners, of other hosts, and names without an owner are never touched.

Users: the Sent2Vec id conversion (``s2v``), the corpus pass of ``sentvec distill``
(``distill``), the metrics of ``sentvec serve --workers`` (``serve``).
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

#: Every run folder's name starts with this.
RUN_DIR_PREFIX = "sentvec-"
_RUN_DIR_RE = re.compile(
    r"^sentvec-(?P<purpose>[a-z0-9]+)-(?P<pid>[0-9]+)-(?P<start>[0-9]+)"
    r"-(?P<host>[0-9a-f]{8})-[a-z0-9_]+$"
)
#: Sent2Vec conversion folders of earlier versions (``sentvec-s2v-<pid>-<random>``: no start
#: time or host), judged by their pid alone.
_PID_ONLY_RE = re.compile(r"^sentvec-s2v-(?P<pid>[0-9]+)-[a-z0-9_]+$")


def pid_alive(pid: int) -> bool:
    """True if a process ``pid`` exists on this host (``os.kill(pid, 0)``; no signal is sent).

    A process of another user counts as alive. A pid reused by a new process also counts as
    alive here (:func:`owner_alive` tells them apart by the start time).
    """
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, owned by another user
        return True
    except OverflowError:  # not a pid of this system
        return False
    return True


def host_tag() -> str:
    """Eight hex digits of this host's name: names made elsewhere (a network file system shared
    by several hosts) are never judged by the pids of this one."""
    import hashlib  # here, not at the top: every command imports this module, few write
    import socket

    return hashlib.sha1(socket.gethostname().encode("utf-8", "replace")).hexdigest()[:8]


def process_start_time(pid: int) -> int | None:
    """The start time of process ``pid`` in clock ticks since boot (``/proc/<pid>/stat`` field
    22), or None when it cannot be read (no such process, no ``/proc``)."""
    try:
        with open(f"/proc/{int(pid)}/stat", "rb") as fh:
            stat = fh.read()
    except OSError:
        return None
    # the command name (field 2) is in parentheses and may hold spaces or ')': split after it
    fields = stat[stat.rfind(b")") + 2 :].split()
    try:
        return int(fields[19])  # field 22 of the whole line
    except (IndexError, ValueError):
        return None


def owner_alive(pid: int, start: int) -> bool:
    """Whether the process that made a run folder (``pid`` started at ``start``) still runs.

    A live process with that pid but another start time is a new process that was given the
    pid: the owner is dead. ``start`` 0 (made where there was no ``/proc``) or a start time
    that cannot be read counts as alive: a folder is then kept longer, never a live one's
    removed.
    """
    if not pid_alive(pid):
        return False
    if start == 0:
        return True
    now = process_start_time(pid)
    return now is None or now == start


@functools.lru_cache(maxsize=4)
def _own_start(pid: int) -> int:
    return process_start_time(pid) or 0


def owner_tag() -> str:
    """``<pid>-<start>-<host>`` of this process: the owner part of the names that
    :func:`remove_dead_entries` judges (start 0 where there is no ``/proc``)."""
    pid = os.getpid()  # a forked child has its own pid, hence its own start time
    return f"{pid}-{_own_start(pid)}-{host_tag()}"


def remove_dead_entries(
    directory: str | os.PathLike[str],
    patterns: Sequence[re.Pattern[str]],
    *,
    directories_only: bool = False,
) -> list[Path]:
    """Remove the entries of ``directory`` that a dead process made; return them.

    A name is judged by the first of ``patterns`` it matches; names that match none are left
    alone. A pattern's groups name the owner: ``pid`` (required), ``start`` (its start time:
    :func:`owner_alive`; without it, the pid alone, :func:`pid_alive`) and ``host``
    (:func:`host_tag`; an entry of another host is never removed). This process's own entries
    and those of live owners stay.

    Parameters
    ----------
    directory : path-like
    patterns : sequence of re.Pattern
    directories_only : bool
        Remove only directories (never a file or a symbolic link with a matching name).

    Returns
    -------
    list of pathlib.Path
        What was removed (nothing when ``directory`` cannot be listed).
    """
    removed: list[Path] = []
    try:
        names = os.listdir(directory)
    except OSError:
        return removed
    here, me = host_tag(), os.getpid()
    for name in names:
        m = next((m for p in patterns if (m := p.match(name)) is not None), None)
        if m is None:
            continue
        owner = m.groupdict()
        pid = int(owner["pid"])
        if owner.get("host") not in (None, here) or pid == me:
            continue
        start = owner.get("start")
        if owner_alive(pid, int(start)) if start is not None else pid_alive(pid):
            continue
        entry = Path(directory) / name
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        elif directories_only:
            continue
        else:
            with contextlib.suppress(FileNotFoundError):
                entry.unlink()
        if not os.path.lexists(entry):
            removed.append(entry)
    return removed


def remove_dead_run_dirs(parent: str | os.PathLike[str] | None = None) -> list[Path]:
    """Remove the run folders of ``parent`` whose owner is dead; return them.

    Parameters
    ----------
    parent : path-like, optional
        Default: the system temp directory (``tempfile.gettempdir()``, ``$TMPDIR``).

    Returns
    -------
    list of pathlib.Path
        What was removed (nothing when ``parent`` cannot be listed).
    """
    root = Path(parent) if parent is not None else Path(tempfile.gettempdir())
    return remove_dead_entries(root, (_RUN_DIR_RE, _PID_ONLY_RE), directories_only=True)


def make_run_dir(purpose: str, parent: str | os.PathLike[str] | None = None) -> Path:
    """Create this process's run folder for ``purpose`` (mode 0700), after removing the run
    folders that dead processes left in ``parent`` (:func:`remove_dead_run_dirs`).

    The caller removes it when done (``shutil.rmtree``, also on errors); if it cannot (the
    process is killed), the next run removes it.

    Parameters
    ----------
    purpose : str
        Lower-case letters and digits: what the folder is for (``"distill"``, ``"serve"``).
    parent : path-like, optional
        Where (default: the system temp directory); it must exist.

    Returns
    -------
    pathlib.Path

    Raises
    ------
    ValueError
        If ``purpose`` is not lower-case letters and digits.
    OSError
        If the folder cannot be created.
    """
    if not re.fullmatch(r"[a-z0-9]+", purpose):
        raise ValueError(f"purpose must be lower-case letters and digits, got {purpose!r}")
    remove_dead_run_dirs(parent)
    prefix = f"{RUN_DIR_PREFIX}{purpose}-{owner_tag()}-"
    return Path(tempfile.mkdtemp(prefix=prefix, dir=None if parent is None else os.fspath(parent)))
