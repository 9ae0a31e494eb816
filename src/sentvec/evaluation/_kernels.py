"""The compiled (numba) kernels of the evaluation: pair dot products and layer combinations.

Both are loops in a fixed order, with the GIL released, so that scoring threads run them in
parallel and every machine gets the same values (no fast-math reassociation). numba is imported,
and each kernel compiled or loaded from numba's on-disk cache, at the first call.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["LazyKernel", "row_dots", "combine_rows", "load_kernels"]


class LazyKernel:
    """A numba kernel compiled (or loaded from numba's on-disk cache) at its first call.

    numba is imported only then (about 0.5 s), once, under a lock, so threads may call the
    kernel concurrently. Compiled with ``nogil=True`` (callers run it in scoring threads) and
    ``cache=True``.

    Parameters
    ----------
    impl : callable
        Plain Python function numba can compile.
    """

    def __init__(self, impl: Callable[..., Any]) -> None:
        self._impl = impl
        self._compiled: Any = None
        self._lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        """True once the kernel has been compiled or loaded."""
        return self._compiled is not None

    def __call__(self, *args: Any) -> Any:
        with self._lock:
            if self._compiled is None:
                import numba

                self._compiled = numba.njit(cache=True, nogil=True)(self._impl)
        return self._compiled(*args)



def _row_dots_impl(A, B, ia, ib, out):  # pragma: no cover - compiled by numba
    d = A.shape[1]
    d4 = d - d % 4
    for p in range(ia.shape[0]):
        a = ia[p]
        b = ib[p]
        s0 = 0.0
        s1 = 0.0
        s2 = 0.0
        s3 = 0.0
        for k in range(0, d4, 4):
            s0 += np.float64(A[a, k]) * np.float64(B[b, k])
            s1 += np.float64(A[a, k + 1]) * np.float64(B[b, k + 1])
            s2 += np.float64(A[a, k + 2]) * np.float64(B[b, k + 2])
            s3 += np.float64(A[a, k + 3]) * np.float64(B[b, k + 3])
        for k in range(d4, d):
            s0 += np.float64(A[a, k]) * np.float64(B[b, k])
        out[p] = (s0 + s1) + (s2 + s3)


_ROW_DOTS = LazyKernel(_row_dots_impl)


def row_dots(A: np.ndarray, B: np.ndarray, ia: np.ndarray, ib: np.ndarray) -> np.ndarray:
    """``out[p] = A[ia[p]] . B[ib[p]]`` in float64, without gathering the rows.

    A compiled loop (numba, GIL released, so scoring threads run it in parallel) with four
    interleaved partial sums in a fixed order: the same value on every machine (no fast-math
    reassociation). float32 inputs are multiplied in float64 (exact products).
    """
    out = np.empty(ia.shape[0], dtype=np.float64)
    if out.size:
        _ROW_DOTS(np.ascontiguousarray(A), np.ascontiguousarray(B),
                  np.ascontiguousarray(ia, dtype=np.intp), np.ascontiguousarray(ib, dtype=np.intp),
                  out)
    return out


def _combine_rows_impl(P, layers, rows, divisor, out):  # pragma: no cover - compiled by numba
    m = layers.shape[0]
    for i in range(rows.shape[0]):
        src = P[rows[i]]  # (L + 1, d) view of one sentence
        o = out[i]
        a = src[layers[0]]
        if m == 2:  # the layer search's pairs: one pass
            b = src[layers[1]]
            for k in range(o.shape[0]):
                o[k] = (a[k] + b[k]) / divisor
            continue
        for k in range(o.shape[0]):
            o[k] = a[k]
        for j in range(1, m):
            b = src[layers[j]]
            for k in range(o.shape[0]):
                o[k] += b[k]
        if m > 1:
            for k in range(o.shape[0]):
                o[k] /= divisor


_COMBINE_ROWS = LazyKernel(_combine_rows_impl)


def combine_rows(P: np.ndarray, idx: tuple[int, ...], rows: np.ndarray,
                 out: np.ndarray) -> np.ndarray:
    """``combine_layers(P, idx)[rows]`` written into ``out``, without the full combined array.

    A compiled loop (numba, GIL released) doing the same element-wise arithmetic in the input
    precision as :func:`sentvec.evaluation.layers.combine_layers` (sum in index order, then one
    division by the count), so the values are bit-identical (tested). ``P``: C-ordered (n, L + 1, d) float32 or
    float64; ``rows``: valid row indices; ``out``: C-ordered (len(rows), d) of P's dtype.
    """
    if rows.shape[0]:
        _COMBINE_ROWS(P, np.asarray(idx, dtype=np.intp), np.ascontiguousarray(rows, np.intp),
                      P.dtype.type(len(idx)), out)
    return out


def load_kernels() -> None:
    """Compile (or load) both kernels for float32 and float64 now, in the calling thread.

    The layer search calls it before its scoring threads start: numba's compiler uses
    ``warnings.catch_warnings``, which is not thread-safe. Errors are left to the real call.
    """
    try:
        one = np.zeros(1, dtype=np.intp)
        for dt in (np.float32, np.float64):
            combine_rows(np.zeros((1, 1, 1), dtype=dt), (0,), one, np.empty((1, 1), dt))
            z = np.zeros((1, 4), dtype=dt)
            row_dots(z, z, one, one)
    except Exception:  # pragma: no cover - reported by the real call
        pass
