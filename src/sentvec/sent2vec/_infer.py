"""Numba kernels for Sent2Vec inference: byte-level tokenizing, vocabulary lookup, n-gram hashing
and averaging, all without the GIL. Imported lazily by :mod:`sentvec.sent2vec.model`.

A sentence is processed exactly as ``FastText::textVector`` does: its UTF-8 bytes are split on
space, ``\\t``, ``\\v``, ``\\f``, ``\\r``, NUL (and, by sentvec's policy, ``\\n``), unknown
tokens are dropped, the n-gram rows are hashed from the remaining ids
(``nwords + (h * 116049371 + id) mod bucket``, uint64 wrap-around), and the float32 sum of the rows
(words first, then n-grams in order) is multiplied by ``float32(1 / count)``.
"""

from __future__ import annotations

import numba
import numpy as np

from sentvec.sent2vec.dictionary import NGRAM_HASH_MULTIPLIER

_MULT = np.uint64(NGRAM_HASH_MULTIPLIER)
_FNV_OFFSET = np.uint64(14695981039346656037)
_FNV_PRIME = np.uint64(1099511628211)


@numba.njit(cache=True, nogil=True)
def _is_sep(b):
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
            if _same(wbytes, woffsets[w], woffsets[w + 1], wbytes, woffsets[other],
                     woffsets[other + 1]):
                break
            slot = (slot + np.uint64(1)) & mask
        table[slot] = -2 if w == skip_id else w
    return table


@numba.njit(cache=True, nogil=True)
def _lookup(data, lo, hi, table, wbytes, woffsets, skip_id):
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


@numba.njit(cache=True, nogil=True)
def embed_range(data, offsets, start, stop, table, wbytes, woffsets, skip_id, mat, nwords,
                bucket, n, out, nfeat, ntok, nskip):
    """Embed sentences ``start .. stop-1`` of a batch into ``out`` (rows of the same index).

    ``data[offsets[s]:offsets[s+1]]`` are the UTF-8 bytes of sentence ``s``. Per sentence,
    ``nfeat`` gets the number of averaged rows, ``ntok`` the number of tokens (known or not)
    and ``nskip`` the number of literal ``</s>`` tokens ignored.
    """
    dim = mat.shape[1]
    maxlen = 1
    for s in range(start, stop):
        ln = offsets[s + 1] - offsets[s]
        if ln > maxlen:
            maxlen = ln
    buf = np.empty(maxlen // 2 + 1, dtype=np.int64)
    acc = np.empty(dim, dtype=np.float32)
    ubucket = np.uint64(bucket if bucket > 0 else 1)
    for s in range(start, stop):
        k = 0
        tokens = 0
        skipped = 0
        i = offsets[s]
        end = offsets[s + 1]
        while i < end:
            while i < end and _is_sep(data[i]):
                i += 1
            if i >= end:
                break
            j = i
            while j < end and not _is_sep(data[j]):
                j += 1
            tokens += 1
            w = _lookup(data, i, j, table, wbytes, woffsets, skip_id)
            if w >= 0:
                buf[k] = w
                k += 1
            elif w == -2:
                skipped += 1
            i = j
        for d in range(dim):
            acc[d] = 0.0
        for a in range(k):
            row = buf[a]
            for d in range(dim):
                acc[d] += mat[row, d]
        cnt = k
        if n > 1:
            for a in range(k):
                h = np.uint64(buf[a])
                for b in range(a + 1, min(k, a + n)):
                    h = h * _MULT + np.uint64(buf[b])
                    row = np.int64(nwords) + np.int64(h % ubucket)
                    for d in range(dim):
                        acc[d] += mat[row, d]
                    cnt += 1
        nfeat[s] = cnt
        ntok[s] = tokens
        nskip[s] = skipped
        if cnt > 0:
            scale = np.float32(1.0 / cnt)
            for d in range(dim):
                out[s, d] = acc[d] * scale
        else:
            for d in range(dim):
                out[s, d] = 0.0
