"""The whitening solvers behind :class:`sentvec.whitening.Whitening` (``solver=`` option).

Every solver maps the fit rows to ``Z = (X - mu) W`` with ``W W^T = Sigma^+`` on the span of the
data, so ``Z`` has identity covariance (WhiteningBERT Eq. 1). They differ in which ``W``:

* ``"eigh"``: ``W = U_k D_k^{-1/2}`` from the eigen-decomposition ``Sigma = U D U^T`` (Eq. 1
  itself; BERT-whitening's dimension reduction keeps the first ``k`` columns).
* ``"cholesky"``: ``W = L^{-T}`` from ``Sigma = L L^T``. Every ``W`` with ``W W^T = Sigma^{-1}``
  equals Eq. 1's up to an orthogonal rotation, which changes no cosine, dot product or distance
  between whitened vectors, so for those uses it is the same whitening, several times cheaper
  to fit. A singular or ill-conditioned ``Sigma`` (every single LayerNorm hidden state) falls
  back to ``"eigh"``, which drops its numerically zero directions.

The LAPACK calls go through :mod:`sentvec.whitening._lapack`, which releases the GIL, so
threads whitening different vectors (the layer search) run in parallel.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from sentvec.whitening.statistics import WhiteningStatistics

__all__ = [
    "SOLVERS",
    "DEFAULT_EPS",
    "MIN_VARIANCE",
    "EigenSolution",
    "CholeskySolution",
    "eigen_solution",
    "cholesky_solution",
]

#: Solvers of :class:`sentvec.whitening.Whitening`.
SOLVERS: tuple[str, ...] = ("eigh", "cholesky")

#: Default relative tolerance below which an eigen-direction of Sigma counts as numerically zero.
DEFAULT_EPS = 1e-10

#: Smallest largest-variance a whitening accepts (2**-900, about 1.5e-271): below it, the
#: eigenvalues that must be resolved (down to 1e-10 of the largest) and the covariance entries
#: themselves reach float64's subnormal range, where they lose their precision silently.
MIN_VARIANCE = 2.0**-900

#: Below this estimated reciprocal condition number the Cholesky solver is not used.
CHOLESKY_MIN_RCOND = 1e-8


@dataclass(frozen=True, eq=False)
class EigenSolution:
    """Eq. 1's whitening: the kept eigen-pairs of Sigma, largest first.

    Attributes
    ----------
    components : ndarray of shape (k, d), float64
        Unit eigenvectors (rows); the largest-magnitude entry of each is positive (svd_flip).
    explained_variance : ndarray of shape (k,), float64
    whitening_matrix : ndarray of shape (d, k), float64
        ``components.T / sqrt(explained_variance)``.
    total_variance : float
        ``trace(Sigma)``.
    rank : int
        Numerical rank of Sigma (eigenvalues above ``eps`` times the largest).
    n_dropped : int
        Requested directions dropped as numerically zero.
    """

    components: np.ndarray
    explained_variance: np.ndarray
    whitening_matrix: np.ndarray
    total_variance: float
    rank: int
    n_dropped: int


def _check_statistics(statistics: WhiteningStatistics) -> None:
    if not isinstance(statistics, WhiteningStatistics):
        raise TypeError(f"statistics must be WhiteningStatistics, got {type(statistics).__name__}")
    if statistics.n_samples < 2:
        raise ValueError(
            f"need at least 2 rows to estimate a covariance, got {statistics.n_samples}"
        )
    if not (np.isfinite(statistics.mean).all() and np.isfinite(statistics.scatter).all()):
        if np.isfinite(statistics.mean).all():
            raise ValueError(
                "the covariance overflows float64: the values (mean entries up to "
                f"{float(np.abs(statistics.mean).max()):.1e}) are too large to square; "
                "rescale them (whitened vectors do not depend on the scale)"
            )
        raise ValueError("statistics contain non-finite values")


def eigen_solution(
    statistics: WhiteningStatistics,
    n_components: int | None = None,
    *,
    eps: float = DEFAULT_EPS,
    warn: bool = True,
) -> EigenSolution:
    """Eq. 1's whitening ``W = U_k D_k^{-1/2}`` of a covariance (``numpy.linalg.eigh``).

    Parameters
    ----------
    statistics : WhiteningStatistics
    n_components : int, optional
        Directions kept (``k <= d``); default all. Eigen-directions with eigenvalue
        ``<= eps * largest`` are dropped, never clipped.
    eps : float
        Relative eigenvalue tolerance.
    warn : bool
        Warn (``UserWarning``) when directions are dropped.

    Raises
    ------
    ValueError
        Fewer than 2 rows, non-finite statistics, ``k > d``, a zero covariance (identical rows),
        or one too small (below :data:`MIN_VARIANCE`) or too large for float64.
    """
    _check_statistics(statistics)
    d = statistics.n_features
    k = d if n_components is None else n_components
    if k > d:
        raise ValueError(f"n_components={k} is invalid; expected at most n_features={d}")
    cov = statistics.covariance
    cov = (cov + cov.T) / 2.0
    evals, evecs = np.linalg.eigh(cov)
    evals, evecs = evals[::-1], evecs[:, ::-1]
    # deterministic signs: largest-magnitude entry of each eigenvector positive (svd_flip)
    rows = np.argmax(np.abs(evecs), axis=0)
    signs = np.sign(evecs[rows, np.arange(d)])
    signs[signs == 0] = 1.0
    evecs = evecs * signs
    top = float(evals[0])
    if not top > statistics._rounding_variance():
        if top < MIN_VARIANCE and float(np.abs(statistics.mean).max()) < 2.0**-400:
            if top == 0.0 and not statistics.mean.any():
                raise ValueError(
                    "the covariance is zero: every row is a zero vector, or its values are "
                    "too small to square in float64 (below about 1e-154); cannot whiten"
                )
            raise ValueError(
                "the covariance is zero: the values (mean entries up to "
                f"{float(np.abs(statistics.mean).max()):.1e}) are too small to square in "
                "float64; rescale them (whitened vectors do not depend on the scale)"
            )
        raise ValueError(
            "the covariance is zero (all rows are identical, up to rounding); cannot whiten"
        )
    if top < MIN_VARIANCE:
        # entries and eigenvalues in float64's subnormal range: results would be silently
        # imprecise (scores off by points), so refuse like the smaller scales above
        raise ValueError(
            f"the covariance is too small for float64: its largest variance is {top:.1e}, "
            f"below {MIN_VARIANCE:.1e}, where the covariance loses its precision (the values "
            "are too small to square accurately); rescale them (whitened vectors do not "
            "depend on the scale)"
        )
    rank = int(np.count_nonzero(evals > eps * top))
    kept = min(k, rank)
    n_dropped = k - kept
    if n_dropped and warn:
        warnings.warn(
            f"Whitening: the covariance of {statistics.n_samples} rows x {d} features is "
            f"singular (numerical rank {rank}, eigenvalues <= eps*max = {eps:g}*{top:.3g} "
            f"treated as zero); dropped {n_dropped} of the {k} requested directions, "
            f"so the output has {kept} columns instead of {k}",
            UserWarning,
            stacklevel=5,
        )
    variance = evals[:kept].copy()
    return EigenSolution(
        components=np.ascontiguousarray(evecs[:, :kept].T),
        explained_variance=variance,
        whitening_matrix=np.ascontiguousarray(evecs[:, :kept] / np.sqrt(variance)),
        total_variance=float(np.trace(cov)),
        rank=rank,
        n_dropped=n_dropped,
    )


@dataclass(frozen=True, eq=False)
class CholeskySolution:
    """A whitening ``W = L^{-T}`` from the Cholesky factor ``Sigma = L L^T``.

    Attributes
    ----------
    factor : ndarray of shape (d, d), float64, Fortran-ordered
        ``L`` (lower triangle).
    """

    factor: np.ndarray

    def apply_inplace(self, centred: np.ndarray) -> np.ndarray:
        """Whitened rows of ``centred`` (``X - mu``, (n, d) float64), shape (n, d), float64.

        ``Z^T = L^{-1} (X - mu)^T``: one triangular solve, in place for a C-ordered
        ``centred`` (its transpose is Fortran-ordered, as LAPACK takes it without a copy);
        other layouts are copied first.
        """
        from sentvec.whitening._lapack import solve_lower_inplace

        centred = np.ascontiguousarray(centred, dtype=np.float64)  # no copy when it is already
        solve_lower_inplace(self.factor, centred.T)
        return centred

    def whitening_matrix(self) -> np.ndarray:
        """The (d, d) matrix ``W = L^{-T}`` (``apply_inplace(X - mu) == (X - mu) @ W`` up to
        rounding)."""
        from scipy.linalg import solve_triangular

        r = self.factor.shape[0]
        return np.ascontiguousarray(solve_triangular(self.factor, np.eye(r), lower=True).T)


def cholesky_solution(
    statistics: WhiteningStatistics, *, eps: float = DEFAULT_EPS
) -> CholeskySolution | None:
    """The Cholesky whitening of a covariance, or None where only the eigen solver is safe.

    Used when Sigma is well-conditioned: LAPACK's ``dpocon`` estimate of the reciprocal
    condition number is at least 1e-8, far above the eigen solver's ``eps = 1e-10``, so no
    direction the eigen solver would drop is kept. A singular or near-singular Sigma, identical
    rows (a covariance of rounding noise) and variances below :data:`MIN_VARIANCE` return None:
    the eigen solver drops the null directions or rejects them with a clear error.

    Parameters
    ----------
    statistics : WhiteningStatistics
    eps : float
        The eigen solver's tolerance (accepted for symmetry; the rcond bound is stricter).
    """
    from sentvec.whitening._lapack import cholesky_lower_inplace, cholesky_rcond

    _check_statistics(statistics)
    # the mean eigenvalue (trace / d) is a lower bound of the largest one the eigen path tests
    if not (
        float(np.trace(statistics.scatter)) / (statistics.n_samples * statistics.n_features)
        > statistics._rounding_variance()
        and float(statistics.scatter.diagonal().max()) / statistics.n_samples >= MIN_VARIANCE
    ):
        return None
    cov = statistics.covariance  # a new symmetric array: its transpose is the same matrix
    anorm = float(np.abs(cov).sum(axis=0).max())
    L = cov.T.copy(order="F")  # factorised in place
    if cholesky_lower_inplace(L) == 0:
        rcond, info = cholesky_rcond(L, anorm)
        if info == 0 and rcond >= max(CHOLESKY_MIN_RCOND, eps):
            return CholeskySolution(L)
    return None
