"""sentvec._memory: page prefaulting never changes an array and degrades to a no-op."""

from __future__ import annotations

import sys
import threading

import numpy as np
import pytest

from sentvec import _memory

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux madvise")


@linux_only
def test_populate_pages_keeps_the_contents_of_a_written_array():
    a = np.arange(3_000_000, dtype=np.float32)  # 12 MB, not page aligned in general
    before = a.copy()
    assert _memory.populate_pages(a) in (True, False)  # False only on a kernel < 5.14
    np.testing.assert_array_equal(a, before)


@linux_only
def test_prefault_async_runs_while_the_array_is_written():
    a = np.empty((2000, 7, 384), dtype=np.float32)  # 21.5 MB >= PREFAULT_MIN_BYTES
    thread = _memory.prefault_async(a)
    assert isinstance(thread, threading.Thread)
    rows = np.random.default_rng(0).permutation(2000)
    for i in rows:  # the caller writes concurrently, in any order
        a[i] = i
    thread.join()
    np.testing.assert_array_equal(a[:, 0, 0], np.arange(2000, dtype=np.float32))
    np.testing.assert_array_equal(a, np.broadcast_to(np.arange(2000, dtype=np.float32)[:, None, None],
                                                     a.shape))


def test_nothing_is_done_for_small_views_read_only_or_non_arrays():
    assert _memory.prefault_async(np.zeros(10)) is None  # under PREFAULT_MIN_BYTES
    assert _memory.populate_pages(np.zeros(0)) is False
    assert _memory.populate_pages(np.zeros(3)) is False  # no whole page inside
    big = np.zeros(4_000_000)
    assert _memory.populate_pages(big[::2]) is False  # not contiguous
    ro = big.copy()
    ro.flags.writeable = False
    assert _memory.populate_pages(ro) is False
    assert _memory.populate_pages([1.0, 2.0]) is False
    # the same cases start no thread, whatever the size limit
    for skipped in (big[::2], ro, [1.0, 2.0], None, 5):
        assert _memory.prefault_async(skipped, min_bytes=0) is None


def test_no_madvise_means_no_thread(monkeypatch):
    monkeypatch.setattr(_memory, "_madvise", lambda: None)
    assert _memory.populate_pages(np.zeros(4_000_000)) is False
    assert _memory.prefault_async(np.zeros(4_000_000), min_bytes=0) is None
