"""A byte-level word -> id hash table compiled with Numba, shared by Sent2Vec inference
(:mod:`sentvec.sent2vec._infer`) and the trainer's corpus conversion (:mod:`sentvec.sent2vec.corpus`).

Words are the UTF-8 bytes ``wbytes[woffsets[w]:woffsets[w + 1]]``; the table is open addressing
over FNV-1a hashes; tokens are split on the official separators (space, ``\\n``, ``\\r``,
``\\t``, ``\\v``, ``\\f``, NUL).
"""

from __future__ import annotations

import numba
import numpy as np

_FNV_OFFSET = np.uint64(14695981039346656037)
_FNV_PRIME = np.uint64(1099511628211)


@numba.njit(cache=True, nogil=True)
def is_sep(b):
    # official separators (space \n \r \t \v \f NUL); \n is a separator by sentvec's policy
    return b == 32 or b == 10 or b == 13 or b == 9 or b == 11 or b == 12 or b == 0


@numba.njit(cache=True, nogil=True)
def _fnv(data, lo, hi):
    h = _FNV_OFFSET
    for i in range(lo, hi):
        h = (h ^ np.uint64(data[i])) * _FNV_PRIME
    return h


@numba.njit(cache=True, nogil=True)
def _same(data, lo, hi, wbytes, wlo, whi):
    if hi - lo != whi - wlo:
        return False
    for i in range(hi - lo):
        if data[lo + i] != wbytes[wlo + i]:
            return False
    return True


@numba.njit(cache=True, nogil=True)
def build_table(wbytes, woffsets, skip_id):
    """Open-addressing hash table of the words (a later duplicate overrides, as officially).

    ``skip_id`` (the id of ``</s>``, or -1) is stored as -2 so lookups can count it.
    """
    n = woffsets.shape[0] - 1
    cap = 16
    while cap < 2 * n + 1:
        cap *= 2
    table = np.full(cap, -1, dtype=np.int32)
    mask = np.uint64(cap - 1)
    for w in range(n):
        slot = _fnv(wbytes, woffsets[w], woffsets[w + 1]) & mask
        while table[slot] != -1:
            other = table[slot]
            if other == -2:
                other = skip_id
            if _same(
                wbytes, woffsets[w], woffsets[w + 1], wbytes, woffsets[other], woffsets[other + 1]
            ):
                break
            slot = (slot + np.uint64(1)) & mask
        table[slot] = -2 if w == skip_id else w
    return table


@numba.njit(cache=True, nogil=True)
def lookup(data, lo, hi, table, wbytes, woffsets, skip_id):
    mask = np.uint64(table.shape[0] - 1)
    slot = _fnv(data, lo, hi) & mask
    while True:
        w = table[slot]
        if w == -1:
            return -1
        real = skip_id if w == -2 else w
        if _same(data, lo, hi, wbytes, woffsets[real], woffsets[real + 1]):
            return w
        slot = (slot + np.uint64(1)) & mask
