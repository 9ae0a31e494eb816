"""``sentvec._parallel``: the CPU count and the threaded fan-out of GIL-free kernels, written
once for Sent2Vec inference, the static encoders and the Moses tokenizer."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

import sentvec
from sentvec import _parallel
from sentvec._parallel import (
    MIN_PARALLEL_ITEMS,
    PIECES_PER_THREAD,
    available_cpus,
    fan_out,
    kernel_executor,
    piece_bounds,
)

ROOT = Path(sentvec.__file__).resolve().parent


def test_available_cpus_follows_the_affinity_mask(monkeypatch):
    monkeypatch.setattr(_parallel.os, "sched_getaffinity", lambda pid: {0, 2, 5}, raising=False)
    assert available_cpus() == 3


def test_available_cpus_without_affinity_uses_cpu_count(monkeypatch):
    monkeypatch.delattr(_parallel.os, "sched_getaffinity", raising=False)
    monkeypatch.setattr(_parallel.os, "cpu_count", lambda: None)
    assert available_cpus() == 1


@pytest.mark.parametrize("n", [0, 1, MIN_PARALLEL_ITEMS - 1])
def test_too_few_items_make_one_piece(n):
    assert piece_bounds(n, threads=16) == [0, n]
    assert kernel_executor(16, n) is None


def test_every_thread_gets_several_even_pieces():
    n = MIN_PARALLEL_ITEMS + 7
    bounds = piece_bounds(n, threads=16)
    assert len(bounds) - 1 == 16 * PIECES_PER_THREAD
    assert bounds[0] == 0 and bounds[-1] == n
    sizes = [b - a for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
    assert max(sizes) - min(sizes) <= 1
    assert piece_bounds(n, threads=1) == [0, n]
    assert kernel_executor(1, n) is None
    assert len(piece_bounds(MIN_PARALLEL_ITEMS, threads=1024)) - 1 == MIN_PARALLEL_ITEMS


def test_fan_out_covers_the_range_in_order_on_several_threads():
    n = 4 * MIN_PARALLEL_ITEMS
    names: set[str] = set()
    barrier = threading.Barrier(2, timeout=30)

    def kernel(a: int, b: int) -> tuple[int, int]:
        names.add(threading.current_thread().name)
        if a == 0 or a == n // 2:  # the first piece of each of the two threads meet here
            barrier.wait()
        return a, b

    bounds = piece_bounds(n, threads=2)
    out = fan_out(kernel, bounds)
    assert out == list(zip(bounds[:-1], bounds[1:], strict=True))
    assert len(names) == 2


def test_fan_out_on_a_given_executor_and_errors_reach_the_caller():
    n = 2 * MIN_PARALLEL_ITEMS
    pool = kernel_executor(4, n)
    assert pool is not None
    try:
        assert fan_out(lambda a, b: b - a, piece_bounds(n, 4), pool) == [n // 16] * 16

        def fail(a: int, b: int) -> None:
            raise ValueError(f"piece {a}")

        with pytest.raises(ValueError, match="piece 0"):
            fan_out(fail, piece_bounds(n, 4), pool)
    finally:
        pool.shutdown()
