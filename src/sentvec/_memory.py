"""Memory guard: refuse, before any allocation or reading, work whose arrays cannot fit.

numpy's own failure comes late (after the corpus was read) and as a traceback
(``_ArrayMemoryError: Unable to allocate 5.09 TiB``); worse, a configuration of 11-16 GiB is
simply allocated on a shared 24 GiB machine and pushes it into swap or the OOM killer.
:func:`check_memory` compares an estimate made from the arguments with the memory available
(``MemAvailable`` of ``/proc/meminfo``, the cgroup limit when one is set) or an explicit limit
(``max_memory``, ``$SENTVEC_MAX_MEMORY``).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from sentvec._environment import MAX_MEMORY
from sentvec.exceptions import InsufficientMemoryError

__all__ = [
    "InsufficientMemoryError",
    "available_memory",
    "parse_memory_size",
    "check_memory",
    "format_bytes",
    "MAX_MEMORY_ENV",
]

#: Environment variable: a memory limit for every guarded operation ("16G", "500M", bytes).
MAX_MEMORY_ENV = MAX_MEMORY.name

_UNITS = {
    "": 1,
    "b": 1,
    "k": 1 << 10,
    "kb": 1 << 10,
    "kib": 1 << 10,
    "m": 1 << 20,
    "mb": 1 << 20,
    "mib": 1 << 20,
    "g": 1 << 30,
    "gb": 1 << 30,
    "gib": 1 << 30,
    "t": 1 << 40,
    "tb": 1 << 40,
    "tib": 1 << 40,
}


def format_bytes(n: float) -> str:
    """``5.09 TiB``-style size (binary units)."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(n) < 1024 or unit == "PiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.2f} {unit}"
        n /= 1024
    return f"{n:.2f} PiB"  # pragma: no cover


def parse_memory_size(text: Any) -> int:
    """Bytes of ``"16G"``, ``"500MiB"``, ``"2.5 GB"`` or an integer (binary units).

    Raises
    ------
    ValueError
        Not a non-negative size.
    """
    if isinstance(text, bool):
        raise ValueError(f"memory size must be a number of bytes or like '16G', got {text!r}")
    if isinstance(text, (int, float)):
        if text < 0 or text != text:
            raise ValueError(f"memory size must be >= 0, got {text!r}")
        return int(text)
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([A-Za-z]*)\s*", str(text))
    if not m or m.group(2).lower() not in _UNITS:
        raise ValueError(
            f"memory size must be a number of bytes or like '16G', '500M', got {text!r}"
        )
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()])


def _cgroup_available() -> int | None:
    """memory.max - memory.current of this process's cgroup (v2), if a limit is set."""
    try:
        rel = Path("/proc/self/cgroup").read_text().strip().split("\n")[0].split(":")[-1]
        base = Path("/sys/fs/cgroup") / rel.lstrip("/")
        limit = (base / "memory.max").read_text().strip()
        if limit == "max":
            return None
        return max(0, int(limit) - int((base / "memory.current").read_text().strip()))
    except (OSError, ValueError, IndexError):
        return None


def available_memory() -> int | None:
    """Bytes a new allocation can take without swapping (None if unknown).

    ``MemAvailable`` of ``/proc/meminfo`` (Linux), else ``os.sysconf`` available pages, capped
    by the cgroup's free room when the process runs under a memory limit.
    """
    avail = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                avail = int(line.split()[1]) * 1024
                break
    except (OSError, ValueError, IndexError):
        pass
    if avail is None:
        try:
            avail = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):
            avail = None
    cg = _cgroup_available()
    if cg is not None:
        avail = cg if avail is None else min(avail, cg)
    return avail


def check_memory(
    need: int, *, what: str, drivers: str, max_memory: Any = None, hint: str = ""
) -> None:
    """Raise :class:`InsufficientMemoryError` if ``need`` bytes cannot fit.

    Parameters
    ----------
    need : int
        Estimated bytes.
    what : str
        The operation ("training", "loading 'x.bin' into memory").
    drivers : str
        The arguments the estimate comes from, with the formula, for the message.
    max_memory : int or str, optional
        A limit (bytes or ``"16G"``); default ``$SENTVEC_MAX_MEMORY``, else the available
        memory (:func:`available_memory`; unknown: no check).
    hint : str
        How to reduce the need, appended to the message.
    """
    source = "--max-memory"
    if max_memory is None and MAX_MEMORY.value():
        max_memory, source = MAX_MEMORY.value(), f"${MAX_MEMORY_ENV}"
    if max_memory is not None:
        limit = parse_memory_size(max_memory)
        where = f"the limit {format_bytes(limit)} ({source})"
    else:
        available = available_memory()
        if available is None:
            return
        limit = available
        where = f"the {format_bytes(limit)} of memory available (MemAvailable)"
    if need > limit:
        raise InsufficientMemoryError(
            f"{what} needs about {format_bytes(need)} of memory, more than {where}: {drivers}"
            + (f"; {hint}" if hint else "")
        )
