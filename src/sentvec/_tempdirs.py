"""Run folders: temporary directories that a killed run cannot leave behind for good.

A run folder is ``<parent>/sentvec-<purpose>-<pid>-<start>-<host tag>-<random>`` (default
parent: the system temp directory). Its name records its owner: the pid, the process's start
time (``/proc/<pid>/stat`` field 22, clock ticks since boot; 0 where there is no ``/proc``) and
the host (:func:`sentvec._io.host_tag`). Every :func:`make_run_dir` first removes the folders
of ``parent`` whose owner is dead (:func:`remove_dead_run_dirs`), whatever their purpose: what a
run killed with ``kill -9`` (or a crash, a power cut: the cases no handler covers) leaves is
removed by the next run that makes a run folder there. The start time tells a dead owner from a
new process that was given its pid, so a reused pid does not keep a dead run's folder; folders
of live owners, of other hosts, and names without an owner are never touched.

Users: the Sent2Vec id conversion (``s2v``), the corpus pass of ``sentvec distill``
(``distill``), the metrics of ``sentvec serve --workers`` (``serve``).
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

from sentvec._io import host_tag, pid_alive

#: Every run folder's name starts with this.
RUN_DIR_PREFIX = "sentvec-"
_RUN_DIR_RE = re.compile(
    r"^sentvec-(?P<purpose>[a-z0-9]+)-(?P<pid>[0-9]+)-(?P<start>[0-9]+)"
    r"-(?P<host>[0-9a-f]{8})-[a-z0-9_]+$"
)
#: Sent2Vec conversion folders of earlier versions (``sentvec-s2v-<pid>-<random>``: no start
#: time or host), judged by their pid alone.
_PID_ONLY_RE = re.compile(r"^sentvec-s2v-(?P<pid>[0-9]+)-[a-z0-9_]+$")


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
    removed: list[Path] = []
    try:
        names = os.listdir(root)
    except OSError:
        return removed
    here, me = host_tag(), os.getpid()
    for name in names:
        if not name.startswith(RUN_DIR_PREFIX):
            continue
        m = _RUN_DIR_RE.match(name)
        if m is not None:
            pid = int(m["pid"])
            if m["host"] != here or pid == me or owner_alive(pid, int(m["start"])):
                continue
        else:
            old = _PID_ONLY_RE.match(name)
            if old is None or int(old["pid"]) == me or pid_alive(int(old["pid"])):
                continue
        d = root / name
        if d.is_dir() and not d.is_symlink():
            shutil.rmtree(d, ignore_errors=True)
            if not os.path.lexists(d):
                removed.append(d)
    return removed


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
    pid = os.getpid()
    start = process_start_time(pid) or 0
    prefix = f"{RUN_DIR_PREFIX}{purpose}-{pid}-{start}-{host_tag()}-"
    return Path(tempfile.mkdtemp(prefix=prefix, dir=None if parent is None else os.fspath(parent)))
