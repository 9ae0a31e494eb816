"""Numba kernel of :class:`sentvec.encoders.static.StaticEncoder` (imports only numpy and numba).

A sentence is a run of *pieces* (``pieces[sent_ptr[s]:sent_ptr[s + 1]]``); piece ``p`` holds the
token ids ``piece_tok[piece_ptr[p]:piece_ptr[p + 1]]``. A piece is either one space-separated
chunk of the text (the chunk cache of ``StaticEncoder``) or a whole sentence (one piece per
sentence). The kernel averages the rows of the tokens, as Model2Vec's ``StaticModel.encode``:
the first ``max_length`` tokens (unknown ones included) are kept, the unknown token is dropped
when asked, row ``mapping[t]`` is scaled by ``weights[t]``, and the sum is divided by the
number of averaged tokens; then, when asked, scaled to unit L2 norm. Sums run in float64.

A float16 table arrives as its uint16 bit patterns with a 65,536-entry float32 look-up table
(numba has no float16 type); a float32 table is read directly.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import types
from numba.extending import overload

__all__ = ["mean_rows", "half_lut"]


def half_lut() -> np.ndarray:
    """float32 value of every float16 bit pattern, shape (65536,)."""
    return np.arange(65536, dtype=np.uint32).astype(np.uint16).view(np.float16).astype(np.float32)


def _row_value(table, lut, r, j):  # pragma: no cover - replaced by the overload in numba
    raise NotImplementedError


@overload(_row_value, inline="always")
def _row_value_impl(table, lut, r, j):
    if table.dtype == types.uint16:
        return lambda table, lut, r, j: lut[table[r, j]]
    return lambda table, lut, r, j: table[r, j]


@numba.njit(cache=True, nogil=True)
def mean_rows(
    start,
    stop,
    sent_ptr,
    pieces,
    piece_ptr,
    piece_tok,
    table,
    lut,
    mapping,
    weights,
    unk,
    max_length,
    normalize,
    out,
    counts,
    truncated,
):
    """Average the rows of sentences ``start .. stop-1`` into ``out`` (rows of the same index).

    ``mapping`` / ``weights`` of length 0 mean none; ``unk < 0`` keeps every token;
    ``max_length < 0`` keeps all. ``counts[s]`` gets the number of averaged tokens,
    ``truncated[s]`` whether tokens past ``max_length`` were left out.
    """
    dim = table.shape[1]
    acc = np.empty(dim, dtype=np.float64)
    has_map = mapping.shape[0] > 0
    has_w = weights.shape[0] > 0
    for s in range(start, stop):
        acc[:] = 0.0
        seen = 0
        n = 0
        cut = False
        for q in range(sent_ptr[s], sent_ptr[s + 1]):
            p = pieces[q]
            for k in range(piece_ptr[p], piece_ptr[p + 1]):
                if max_length >= 0 and seen >= max_length:
                    cut = True
                    break
                seen += 1
                t = piece_tok[k]
                if t == unk:
                    continue
                r = mapping[t] if has_map else t
                w = np.float64(weights[t]) if has_w else 1.0
                for j in range(dim):
                    acc[j] += w * np.float64(_row_value(table, lut, r, j))
                n += 1
            if cut:
                break
        counts[s] = n
        truncated[s] = cut
        if n == 0:
            out[s, :] = 0.0
            continue
        inv = 1.0 / n
        if normalize:
            sq = 0.0
            for j in range(dim):
                acc[j] *= inv
                sq += acc[j] * acc[j]
            inv = 1.0 / np.sqrt(sq) if sq > 0.0 else 1.0
        for j in range(dim):
            out[s, j] = acc[j] * inv
