"""Fault in the pages of a large new output array ahead of the writes that fill it.

A fresh ``np.empty`` array of hundreds of MB has no physical pages yet: each first write to a
4 KiB page costs a page fault, paid by the thread that writes. In an encoder's loop that thread
is the one feeding the model, so the faults are serial time between batches (in a virtual
machine that returns freed memory to its host, about 3 s per GiB: 0.8 s for the 280 MB of
MiniLM's per-layer vectors of the 26,083 STS sentences). Linux (5.14 and later) can populate
the pages of a range as if written, without changing their contents
(``madvise(MADV_POPULATE_WRITE)``); a background thread does this while the caller tokenizes and
runs the first batches. ctypes releases the GIL during the call.

Everything here is an optimisation: on other systems, older kernels or any error, nothing is
done and the pages are faulted by the writes as before. The contents of the array are never
read or changed, so the caller may write to it while the pages are populated.
"""

from __future__ import annotations

import sys
import threading
from functools import lru_cache
from typing import Any

import numpy as np

#: ``MADV_POPULATE_WRITE`` of Linux's ``<linux/mman.h>`` (kernel 5.14 and later).
_MADV_POPULATE_WRITE = 23

_PAGE = 4096

#: Arrays smaller than this are left to the writes (the thread would cost more than it saves).
PREFAULT_MIN_BYTES = 16 * 2**20


@lru_cache(maxsize=1)
def _madvise() -> Any:
    """libc's ``madvise`` through ctypes, or None where it is not available."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        fn = ctypes.CDLL(None, use_errno=True).madvise
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    fn.restype = ctypes.c_int
    return fn


def _whole_pages(array: Any) -> tuple[int, int] | None:
    """``(start, end)`` addresses of the whole pages inside ``array``'s buffer, or None when
    there are none or the array is not one to populate (not an ndarray, read-only, or not
    C- or Fortran-contiguous)."""
    if (not isinstance(array, np.ndarray) or not array.flags.writeable
            or not (array.flags.c_contiguous or array.flags.f_contiguous)):
        return None
    start = -(-array.ctypes.data // _PAGE) * _PAGE
    end = (array.ctypes.data + array.nbytes) // _PAGE * _PAGE
    return (start, end) if end > start else None


def populate_pages(array: np.ndarray) -> bool:
    """Fault in the whole pages of ``array``'s buffer without changing its contents.

    Parameters
    ----------
    array : ndarray
        C- or Fortran-contiguous and writeable (otherwise nothing is done).

    Returns
    -------
    bool
        True if the kernel populated the pages; False if nothing was done (not Linux, a kernel
        without ``MADV_POPULATE_WRITE``, a small, read-only or non-contiguous array).
    """
    fn = _madvise()
    pages = _whole_pages(array)
    if fn is None or pages is None:
        return False
    start, end = pages
    return fn(start, end - start, _MADV_POPULATE_WRITE) == 0


def prefault_async(array: np.ndarray, *,
                   min_bytes: int | None = None) -> threading.Thread | None:
    """Start a daemon thread that runs :func:`populate_pages` on ``array``.

    Returns the started thread, or None (nothing started) for anything :func:`populate_pages`
    would skip, for arrays under ``min_bytes`` bytes (default :data:`PREFAULT_MIN_BYTES`) and
    where the call is not available. The thread keeps ``array`` alive until it is done; nobody
    needs to join it.
    """
    limit = PREFAULT_MIN_BYTES if min_bytes is None else min_bytes
    if _whole_pages(array) is None or array.nbytes < limit or _madvise() is None:
        return None
    thread = threading.Thread(target=populate_pages, args=(array,), name="sentvec-prefault",
                              daemon=True)
    thread.start()
    return thread
