"""The compiled (numba) kernel of the evaluation: the dot products of scored pairs.

A loop in a fixed order, with the GIL released, so that scoring threads run it in parallel and
every machine gets the same cosines (no fast-math reassociation). numba is imported, and the
kernel compiled or loaded from numba's on-disk cache, at the first call (:class:`LazyKernel`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from sentvec._jit import load_kernel

__all__ = ["LazyKernel", "row_dots", "load_kernels"]


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
            load_kernel(self._compiled, args)  # a first run compiles: say so if it is long
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
        _ROW_DOTS(
            np.ascontiguousarray(A),
            np.ascontiguousarray(B),
            np.ascontiguousarray(ia, dtype=np.intp),
            np.ascontiguousarray(ib, dtype=np.intp),
            out,
        )
    return out


def load_kernels() -> None:
    """Compile (or load) the kernel for float32 and float64 now, in the calling thread.

    The layer search calls it before its scoring threads start: numba's compiler uses
    ``warnings.catch_warnings``, which is not thread-safe. Errors are left to the real call.
    """
    try:
        one = np.zeros(1, dtype=np.intp)
        for dt in (np.float32, np.float64):
            z = np.zeros((1, 4), dtype=dt)
            row_dots(z, z, one, one)
    except Exception:  # pragma: no cover - reported by the real call
        pass
