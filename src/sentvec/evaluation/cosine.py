"""Cosine similarity of row pairs, as the STS and RTE protocols score them.

float64 dot products and norms in a fixed order (the kernels of
:mod:`sentvec.evaluation._kernels`), rounded to 12 decimals so identical vectors tie at 1.0;
rows whose squares would overflow or underflow rescaled exactly by a power of two; a zero vector
flagged (its cosine undefined), with SentEval's rule (0) or WhiteningBERT's (1.0 for two zero
vectors, 0.5 for one) applied by the caller.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from sentvec._validation import check_embeddings
from sentvec.evaluation._kernels import row_dots

__all__ = ["cosine_similarity_rows"]


def _row_norms(A: np.ndarray) -> np.ndarray:
    """Euclidean norm of each row of ``A`` (float64), by :func:`~sentvec.evaluation._kernels.row_dots`."""
    idx = np.arange(A.shape[0], dtype=np.intp)
    return np.sqrt(row_dots(A, A, idx, idx))


#: Row norms inside this range leave every product and sum of :func:`~sentvec.evaluation._kernels.row_dots` in the normal
#: float64 range (no overflow, no underflow to subnormals) for any width up to 2**100.
_SAFE_NORMS = (2.0**-450, 2.0**450)


def _rescale_extreme_rows(A: np.ndarray, norms: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return ``A`` and its row norms with out-of-range rows scaled by a power of two.

    Only float64 rows can be affected (float32 values squared stay far inside float64's range):
    a row with entries near 1e200 has an infinite squared norm, one near 1e-200 a zero one, and
    either would make its cosines NaN or flag it as a zero vector. Such a row is multiplied by
    ``2**-e``, ``e`` the binary exponent of its largest entry, which is exact and leaves every
    cosine of that row unchanged (cosine is scale-invariant). Other rows are not touched, so
    ordinary inputs give bit-identical results; zero rows stay zero. ``A`` is copied when a row
    changes, never modified.
    """
    bad = ~((norms >= _SAFE_NORMS[0]) & (norms <= _SAFE_NORMS[1]))
    if not bad.any():
        return A, norms
    from sentvec._numeric import unit_scale_rows

    scaled, nonzero = unit_scale_rows(A[bad])
    rows = np.flatnonzero(bad)[nonzero]
    if rows.size == 0:
        return A, norms
    A = np.array(A, dtype=np.float64)
    A[rows] = scaled[nonzero]
    norms = norms.copy()
    norms[rows] = _row_norms(A[rows])
    return A, norms


def cosine_similarity_rows(A: np.ndarray, B: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Row-wise cosine similarity of two (n, d) arrays.

    Parameters
    ----------
    A, B : array-like of shape (n, d)
        float32 or float64 (other real dtypes are converted to float64).

    Returns
    -------
    cos : ndarray of shape (n,), float64
        Cosine of each row pair, rounded to 12 decimals; 0.0 where a row is a zero vector
        (cosine undefined).
    undefined : ndarray of shape (n,), bool
        True where either row has zero norm.

    Raises
    ------
    ValueError
        ``A`` and ``B`` are not 2-D arrays of equal shape, are complex, or hold NaN or inf.

    Notes
    -----
    Dot products and norms are float64 sums over the features in a fixed order, so the scores
    of ``score_sts`` are reproducible across machines. Rounding to 1e-12 makes pairs of
    identical vectors (identical sentences: 65 pairs in STS12 SMTeuroparl) tie exactly at 1.0.
    Unrounded, they come out as ``1 +- few ulp`` depending on the vector, an arbitrary order
    that moved a Spearman score by 0.07 points between two algebraically equal whitening
    computations; with exact ties Spearman uses average ranks.

    float64 rows whose norm lies outside about 1e-135 ... 1e135 (squares would overflow or
    underflow) are first scaled by a power of two, which is exact and does not change their
    cosines, so values such as 1e200 or 1e-200 give correct cosines instead of NaN or 0.
    """
    for name, X in (("A", A), ("B", B)):
        # before check_embeddings, whose float64 cast would drop the imaginary part
        if np.iscomplexobj(X):
            raise ValueError(f"cosine similarity needs real vectors, {name} is complex")
    A, B = check_embeddings(A, name="A"), check_embeddings(B, name="B")
    if A.shape != B.shape:
        raise ValueError(f"A and B must be 2-D of equal shape, got {A.shape} and {B.shape}")
    idx = np.arange(A.shape[0], dtype=np.intp)
    A, norm_a = _rescale_extreme_rows(A, _row_norms(A))
    B, norm_b = _rescale_extreme_rows(B, _row_norms(B))
    return _cosines_from_norms(row_dots(A, B, idx, idx), norm_a, norm_b)


def _cosines_from_norms(
    num: np.ndarray, norm1: np.ndarray, norm2: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``num / (norm1 * norm2)`` rounded to 12 decimals; 0 and flagged where a norm is 0."""
    den = norm1 * norm2
    undefined = ~(den > 0)
    cos = np.divide(num, den, out=np.zeros_like(num), where=~undefined)
    return np.round(cos, 12), undefined


def _subset_cosines(
    Z: np.ndarray, subset_pairs: Sequence[tuple[np.ndarray, np.ndarray]]
) -> tuple[list[np.ndarray], int, int]:
    """Cosines of the pairs ``(Z[j1], Z[j2])`` of each subset (as ``cosine_similarity_rows``).

    ``Z``: validated float32 or float64 rows. Row norms are computed once per distinct row.
    Returns the cosines per subset, the number of zero rows of ``Z`` and the number of pairs
    whose cosine is undefined.
    """
    Z, norms = _rescale_extreme_rows(Z, _row_norms(Z))
    out = []
    n_undefined = 0
    for j1, j2 in subset_pairs:
        cos, undefined = _cosines_from_norms(row_dots(Z, Z, j1, j2), norms[j1], norms[j2])
        n_undefined += int(undefined.sum())
        out.append(cos)
    return out, int((~(norms > 0)).sum()), n_undefined


def _whiteningbert_zero_rule(
    cosines: list[np.ndarray], Z: np.ndarray, subset_pairs: Sequence[tuple[np.ndarray, np.ndarray]]
) -> None:
    """Set, in place, the cosine of two zero rows of ``Z`` to 1.0 and of one zero row to 0.5.

    What ``1 - paired_cosine_distances`` gives: scikit-learn normalises rows and leaves zero rows
    at zero, and the distance is ``||x/|x| - y/|y| ||^2 / 2``.
    """
    zero = ~np.any(Z != 0, axis=1)
    for cos, (j1, j2) in zip(cosines, subset_pairs, strict=True):
        z1, z2 = zero[j1], zero[j2]
        cos[z1 & z2] = 1.0
        cos[z1 ^ z2] = 0.5
