"""Small numeric helpers shared by the scoring and search code."""

from __future__ import annotations

import numpy as np


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
