"""Numba kernels that walk the dictionary entries of an official ``.bin`` file in one pass.

An entry is the word's bytes, a NUL, an int64 count and an int8 type (``Dictionary::save``).
The walk is inherently sequential (an entry's end is only known from its NUL, and the 9 bytes
after it may hold NULs too), so a Python loop costs about 1 µs per entry: 1-2 s for the 1-3 M
words of the published models. Compiled, it takes milliseconds. Imported lazily by
:mod:`sentvec.sent2vec.binfile`.
"""

from __future__ import annotations

import numba
import numpy as np

#: Bytes after the NUL of an entry: int64 count, int8 type.
ENTRY_TAIL = 9


@numba.njit(cache=True, nogil=True)
def scan_entries(buf, pos, first, size, starts, nuls, counts, types):
    """Parse entries ``first .. size-1``, the first starting at byte ``pos`` of ``buf`` (uint8).

    Entry ``i``'s word is ``buf[starts[i]:nuls[i]]``; ``counts`` (int64) and ``types`` (int8)
    receive its fixed-size fields. Stops early when the next entry is not complete inside
    ``buf`` (a truncated file, or a buffer that has to grow before the walk resumes).

    Returns
    -------
    (done, pos) : entries parsed so far (``size`` when complete) and the offset after the last
    complete one.
    """
    n = buf.shape[0]
    i = first
    while i < size:
        j = pos
        while j < n and buf[j] != 0:
            j += 1
        if j + 1 + ENTRY_TAIL > n:
            break
        starts[i] = pos
        nuls[i] = j
        c = np.int64(0)
        for b in range(8):  # little-endian int64
            c |= np.int64(buf[j + 1 + b]) << np.int64(8 * b)
        counts[i] = c
        t = np.int64(buf[j + 9])
        types[i] = t - 256 if t > 127 else t
        pos = j + 1 + ENTRY_TAIL
        i += 1
    return i, pos


@numba.njit(cache=True, nogil=True)
def copy_words(buf, starts, nuls, shift, wbytes, offsets):
    """Copy the words ``buf[starts[i] - shift:nuls[i] - shift]`` end to end into ``wbytes``
    (sized ``sum(nuls - starts)``); ``offsets`` (``len(starts) + 1``) receives where each
    starts, ``offsets[-1]`` the total."""
    k = 0
    for i in range(starts.shape[0]):
        offsets[i] = k
        for b in range(starts[i] - shift, nuls[i] - shift):
            wbytes[k] = buf[b]
            k += 1
    offsets[starts.shape[0]] = k
    return k
