"""CPU count and the threaded fan-out of a compiled kernel that releases the GIL.

Sent2Vec inference, the static encoders' mean of rows and the Moses tokenizer run numba kernels
compiled with ``nogil=True`` over a range of items ``[start, stop)``. :func:`fan_out` splits the
range into pieces and runs them on threads; the rules (how many items are worth splitting, how
many pieces per thread) are written here once.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

__all__ = [
    "MIN_PARALLEL_ITEMS",
    "PIECES_PER_THREAD",
    "available_cpus",
    "fan_out",
    "piece_bounds",
    "kernel_executor",
]

T = TypeVar("T")

#: Fewest items worth splitting over threads: a shorter range runs on the calling thread (the
#: threads' start and join would cost about what the kernel saves).
MIN_PARALLEL_ITEMS = 2048
#: Pieces per thread: uneven items (long sentences, long lines) even out over several pieces.
PIECES_PER_THREAD = 4


def available_cpus() -> int:
    """The number of CPUs this process may run on (at least 1).

    The scheduler affinity (``os.sched_getaffinity``: ``taskset``, cgroup cpusets) where the
    platform has it, else ``os.cpu_count()``.

    Returns
    -------
    int
    """
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def piece_bounds(n: int, threads: int) -> list[int]:
    """Where :func:`fan_out` cuts ``[0, n)``: ``[0, ..., n]``, one piece per consecutive pair.

    ``threads`` threads work, each on :data:`PIECES_PER_THREAD` pieces of (nearly) equal size
    (at most ``n`` pieces); a single piece ``[0, n]`` for one thread or fewer than
    :data:`MIN_PARALLEL_ITEMS` items.

    Parameters
    ----------
    n : int
        Number of items (>= 0).
    threads : int
        The most threads to use (>= 1).

    Returns
    -------
    list of int
        Non-decreasing bounds, first 0, last ``n``.
    """
    if threads <= 1 or n < MIN_PARALLEL_ITEMS:
        return [0, n]
    parts = min(threads * PIECES_PER_THREAD, n)
    return [n * i // parts for i in range(parts + 1)]


def kernel_executor(threads: int, n: int) -> ThreadPoolExecutor | None:
    """A thread pool for repeated :func:`fan_out` calls over ``n`` items in all (batch after
    batch), or None when :func:`piece_bounds` would never split ``n`` items on ``threads``.

    The caller shuts it down (``executor.shutdown()``, in a ``finally``).

    Parameters
    ----------
    threads : int
        The most threads to use (>= 1).
    n : int
        Items to be processed, over every batch.

    Returns
    -------
    concurrent.futures.ThreadPoolExecutor or None
    """
    return ThreadPoolExecutor(threads) if threads > 1 and n >= MIN_PARALLEL_ITEMS else None


def fan_out(
    kernel: Callable[[int, int], T],
    bounds: Sequence[int],
    executor: ThreadPoolExecutor | None = None,
) -> list[T]:
    """Run ``kernel(start, stop)`` on every piece of ``bounds``, on threads when there are several.

    ``kernel`` must release the GIL (a numba function compiled with ``nogil=True``) for the
    threads to run at once, and must write only its own piece of any shared output.

    Parameters
    ----------
    kernel : callable ``(start, stop) -> T``
    bounds : sequence of int
        Piece limits, as :func:`piece_bounds` returns them.
    executor : ThreadPoolExecutor, optional
        A pool to run on (:func:`kernel_executor`); by default a pool is made for this call
        (one thread per :data:`PIECES_PER_THREAD` pieces) and shut down before returning.

    Returns
    -------
    list
        ``kernel``'s results, one per piece, in order.

    Raises
    ------
    Exception
        What the first failing piece (in piece order) raised.
    """
    starts, stops = bounds[:-1], bounds[1:]
    if len(starts) <= 1:
        return [kernel(a, b) for a, b in zip(starts, stops, strict=True)]
    if executor is not None:
        return list(executor.map(kernel, starts, stops))
    with ThreadPoolExecutor(max(1, len(starts) // PIECES_PER_THREAD)) as pool:
        return list(pool.map(kernel, starts, stops))
