"""Small numeric helpers shared by the scoring and search code."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np

#: Smallest largest-variance a whitening accepts (2**-900, about 1.5e-271): below it, the
#: eigenvalues that must be resolved (down to 1e-10 of the largest) and the covariance entries
#: themselves reach float64's subnormal range, where they lose their precision silently.
MIN_VARIANCE = 2.0 ** -900


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


def unit_scale_rows(A: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows of ``A`` multiplied by a power of two so that their largest ``|value|`` is in [0.5, 1).

    Multiplying by ``2**-e`` (``e`` the binary exponent of the row's largest entry) is exact
    and does not change the row's direction, so cosines and unit vectors computed from the
    result equal those of ``A``, while squared norms can no longer overflow or underflow
    float64 (for rows near 1e200, 1e-200, or beyond float32's range).

    Parameters
    ----------
    A : ndarray of shape (n, d), real

    Returns
    -------
    scaled : ndarray of shape (n, d), float64
        A new array; all-zero rows stay zero.
    nonzero : ndarray of shape (n,), bool
        False for the all-zero rows.
    """
    out = np.array(A, dtype=np.float64)
    peak = np.abs(out).max(axis=1) if out.shape[1] else np.zeros(len(out))
    nonzero = peak > 0
    out[nonzero] = np.ldexp(out[nonzero], -np.frexp(peak[nonzero])[1][:, None])
    return out, nonzero
