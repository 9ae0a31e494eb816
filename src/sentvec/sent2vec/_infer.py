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

from sentvec.sent2vec._wordtable import build_table
from sentvec.sent2vec._wordtable import is_sep as _is_sep
from sentvec.sent2vec._wordtable import lookup as _lookup
from sentvec.sent2vec.dictionary import NGRAM_HASH_MULTIPLIER

_MULT = np.uint64(NGRAM_HASH_MULTIPLIER)
__all__ = ["build_table", "embed_range"]


@numba.njit(cache=True, nogil=True)
def embed_range(
    data,
    offsets,
    start,
    stop,
    table,
    wbytes,
    woffsets,
    skip_id,
    mat,
    nwords,
    bucket,
    n,
    out,
    nfeat,
    ntok,
    nskip,
):
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
