"""The whitening solvers behind :class:`sentvec.whitening.Whitening` (``solver=`` option).

Every solver maps the fit rows to ``Z = (X - mu) W`` with ``W W^T = Sigma^+`` on the span of the
data, so ``Z`` has identity covariance (WhiteningBERT Eq. 1). They differ in which ``W``:

* ``"eigh"``: ``W = U_k D_k^{-1/2}`` from the eigen-decomposition ``Sigma = U D U^T`` (Eq. 1
  itself; BERT-whitening's dimension reduction keeps the first ``k`` columns).
* ``"cholesky"``: ``W = L^{-T}`` from ``Sigma = L L^T``. Every ``W`` with ``W W^T = Sigma^{-1}``
  equals Eq. 1's up to an orthogonal rotation, which changes no cosine, dot product or distance
  between whitened vectors, so for those uses it is the same whitening, several times cheaper
  to fit. A singular ``Sigma`` with a clear null space (every single LayerNorm hidden state)
  goes through a pivoted Cholesky factorisation that drops the same directions as ``"eigh"``;
  a near-singular one without a clear gap falls back to ``"eigh"``.

The LAPACK calls go through :mod:`sentvec.whitening._lapack`, which releases the GIL, so
threads whitening different vectors (the layer search) run in parallel.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from sentvec.whitening.statistics import WhiteningStatistics

__all__ = ["SOLVERS", "DEFAULT_EPS", "MIN_VARIANCE", "EigenSolution", "CholeskySolution",
           "eigen_solution", "cholesky_solution"]

#: Solvers of :class:`sentvec.whitening.Whitening`.
SOLVERS: tuple[str, ...] = ("eigh", "cholesky")

#: Default relative tolerance below which an eigen-direction of Sigma counts as numerically zero.
DEFAULT_EPS = 1e-10

#: Smallest largest-variance a whitening accepts (2**-900, about 1.5e-271): below it, the
#: eigenvalues that must be resolved (down to 1e-10 of the largest) and the covariance entries
#: themselves reach float64's subnormal range, where they lose their precision silently.
MIN_VARIANCE = 2.0 ** -900

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
            f"need at least 2 rows to estimate a covariance, got {statistics.n_samples}")
    if not (np.isfinite(statistics.mean).all() and np.isfinite(statistics.scatter).all()):
        if np.isfinite(statistics.mean).all():
            raise ValueError(
                "the covariance overflows float64: the values (mean entries up to "
                f"{float(np.abs(statistics.mean).max()):.1e}) are too large to square; "
                "rescale them (whitened vectors do not depend on the scale)")
        raise ValueError("statistics contain non-finite values")


def eigen_solution(statistics: WhiteningStatistics, n_components: int | None = None, *,
                   eps: float = DEFAULT_EPS, warn: bool = True) -> EigenSolution:
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
        if top < MIN_VARIANCE and float(np.abs(statistics.mean).max()) < 2.0 ** -400:
            if top == 0.0 and not statistics.mean.any():
                raise ValueError(
                    "the covariance is zero: every row is a zero vector, or its values are "
                    "too small to square in float64 (below about 1e-154); cannot whiten")
            raise ValueError(
                "the covariance is zero: the values (mean entries up to "
                f"{float(np.abs(statistics.mean).max()):.1e}) are too small to square in "
                "float64; rescale them (whitened vectors do not depend on the scale)")
        raise ValueError("the covariance is zero (all rows are identical, up to rounding); "
                         "cannot whiten")
    if top < MIN_VARIANCE:
        # entries and eigenvalues in float64's subnormal range: results would be silently
        # imprecise (scores off by points), so refuse like the smaller scales above
        raise ValueError(
            f"the covariance is too small for float64: its largest variance is {top:.1e}, "
            f"below {MIN_VARIANCE:.1e}, where the covariance loses its precision (the values "
            "are too small to square accurately); rescale them (whitened vectors do not "
            "depend on the scale)")
    rank = int(np.count_nonzero(evals > eps * top))
    kept = min(k, rank)
    n_dropped = k - kept
    if n_dropped and warn:
        warnings.warn(
            f"Whitening: the covariance of {statistics.n_samples} rows x {d} features is "
            f"singular (numerical rank {rank}, eigenvalues <= eps*max = {eps:g}*{top:.3g} "
            f"treated as zero); dropped {n_dropped} of the {k} requested directions, "
            f"so the output has {kept} columns instead of {k}",
            UserWarning, stacklevel=5,
        )
    variance = evals[:kept].copy()
    return EigenSolution(
        components=np.ascontiguousarray(evecs[:, :kept].T), explained_variance=variance,
        whitening_matrix=np.ascontiguousarray(evecs[:, :kept] / np.sqrt(variance)),
        total_variance=float(np.trace(cov)), rank=rank, n_dropped=n_dropped)


@dataclass(frozen=True, eq=False)
class CholeskySolution:
    """A whitening ``W`` with ``W W^T = Sigma^+`` from a (pivoted) Cholesky factor.

    ``kind == "cholesky"``: ``Sigma = L L^T`` and ``Z^T = L^{-1} (X - mu)^T``.
    ``kind == "pivoted-cholesky"``: ``P^T Sigma P = L L^T`` stopped after ``r`` pivots ``kept``;
    ``Z = L11^{-1} ((x - mu) - Q Q^T (x - mu))[kept]``, ``Q`` an orthonormal basis of the null
    space (each row's component along it, rounding noise of the input, is projected out, as the
    eigen solver does), computed as ``L11^{-1} x[kept] - shift (Q^T x)``.

    Attributes
    ----------
    kind : {"cholesky", "pivoted-cholesky"}
    factor : ndarray of shape (r, r), float64, Fortran-ordered
        ``L`` (lower triangle), or ``L11`` of the kept pivots.
    kept : ndarray of shape (r,) of intp or None
    null_basis : ndarray of shape (d, d - r), float64, or None
    shift : ndarray of shape (r, d - r), float64, or None
    n_dropped : int
        ``d - r``.
    """

    kind: str
    factor: np.ndarray
    kept: np.ndarray | None = None
    null_basis: np.ndarray | None = None
    shift: np.ndarray | None = None
    n_dropped: int = 0

    def apply_inplace(self, centred: np.ndarray) -> np.ndarray:
        """Whitened rows of ``centred`` (``X - mu``, (n, d) float64), shape (n, r), float64.

        The plain Cholesky solve overwrites a C-ordered ``centred`` and returns it (other
        layouts are copied first); the pivoted one returns a new array.
        """
        from sentvec.whitening._lapack import solve_lower_inplace

        centred = np.ascontiguousarray(centred, dtype=np.float64)  # no copy when it is already
        if self.kind == "cholesky":
            # Z^T = L^{-1} (X - mu)^T: one triangular solve, in place; (X - mu)^T of a
            # C-ordered array is Fortran-ordered, so LAPACK takes it without a copy
            solve_lower_inplace(self.factor, centred.T)
            return centred
        along = centred @ self.null_basis  # (n, m): each row's component along the null space
        Z = np.ascontiguousarray(centred[:, self.kept])
        solve_lower_inplace(self.factor, Z.T)
        Z -= along @ self.shift.T
        return Z

    def whitening_matrix(self, n_features: int) -> np.ndarray:
        """The (d, r) matrix ``W`` with ``apply_inplace(X - mu) == (X - mu) @ W`` (up to rounding)."""
        from scipy.linalg import solve_triangular

        r = self.factor.shape[0]
        inv_t = solve_triangular(self.factor, np.eye(r), lower=True).T  # L^{-T}
        if self.kind == "cholesky":
            return np.ascontiguousarray(inv_t)
        W = np.zeros((n_features, r))
        W[self.kept] = inv_t
        W -= self.null_basis @ self.shift.T
        return W


def cholesky_solution(statistics: WhiteningStatistics, *,
                      eps: float = DEFAULT_EPS) -> CholeskySolution | None:
    """The Cholesky whitening of a covariance, or None where only the eigen solver is safe.

    Used when Sigma is well-conditioned (LAPACK ``dpocon`` estimate >= 1e-8, while the eigen
    solver drops directions below ``eps = 1e-10``), or singular with a clear null space
    (:func:`_pivoted_solution`). Identical rows (a covariance of rounding noise) and variances
    below :data:`MIN_VARIANCE` return None too: the eigen solver rejects them with a clear error.

    Parameters
    ----------
    statistics : WhiteningStatistics
    eps : float
        The eigen solver's tolerance whose dropped directions the pivoted path reproduces.
    """
    from sentvec.whitening._lapack import cholesky_lower_inplace, cholesky_rcond

    _check_statistics(statistics)
    # the mean eigenvalue (trace / d) is a lower bound of the largest one the eigen path tests
    if not (float(np.trace(statistics.scatter)) / (statistics.n_samples * statistics.n_features)
            > statistics._rounding_variance()
            and float(statistics.scatter.diagonal().max()) / statistics.n_samples
            >= MIN_VARIANCE):
        return None
    cov = statistics.covariance  # a new symmetric array: its transpose is the same matrix
    anorm = float(np.abs(cov).sum(axis=0).max())
    L = cov.T.copy(order="F")  # factorised in place; cov is kept for the pivoted path
    if cholesky_lower_inplace(L) == 0:
        rcond, info = cholesky_rcond(L, anorm)
        if info == 0 and rcond >= CHOLESKY_MIN_RCOND:
            return CholeskySolution("cholesky", L)
    return _pivoted_solution(cov, anorm, eps)


def _pivoted_solution(cov: np.ndarray, anorm: float, eps: float) -> CholeskySolution | None:
    """Pivoted Cholesky whitening of a covariance with a clear null space; else None.

    Every single hidden state of a LayerNorm model lies in a hyperplane (its features, scaled by
    the LayerNorm gain, sum to a constant), so its covariance has an exact null direction and the
    eigen solver drops it (eigenvalues ``<= eps * largest``). The same whitening, up to a
    rotation, comes from the rank-revealing factorisation ``P^T Sigma P = L L^T`` stopped after
    ``r`` pivots: the leading ``r`` permuted coordinates span the data and ``L11^{-1}`` whitens
    them; the other ``d - r`` coordinates are linear functions of these and are dropped.

    Taken only when the result provably drops the same number of directions as the eigen path:
    the trailing Schur complement ``S`` bounds the ``d - r`` smallest eigenvalues by
    ``||S||_F``, which must be ``<= 1e-2 * eps * max(diag)`` (<= 1e-2 * eps * largest), and the
    kept block bounds the rest from below (interlacing) by its smallest eigenvalue, estimated as
    ``rcond * ||A||_1`` (LAPACK ``dpocon``), which must be ``>= 1e2 * eps * ||Sigma||_1``
    (>= 1e2 * eps * largest) and ``rcond >= 1e-8`` as in the plain Cholesky path.
    """
    from scipy.linalg import solve_triangular

    from sentvec.whitening._lapack import cholesky_rcond, pivoted_cholesky_lower_inplace

    d = cov.shape[0]
    top_diag = float(cov.diagonal().max())
    factor = np.array(cov, order="F")  # factorised in place; cov is kept for the checks
    piv, rank, _ = pivoted_cholesky_lower_inplace(factor, 1e-2 * eps * top_diag)
    if not 0 < rank < d:
        return None
    kept, rest = piv[:rank], piv[rank:]
    L21 = factor[rank:, :rank]
    # relative to the largest variance, so that the norm neither overflows nor underflows
    schur = (cov[np.ix_(rest, rest)] - L21 @ L21.T) / top_diag
    if not np.linalg.norm(schur) <= 1e-2 * eps:
        return None
    L11 = np.tril(factor[:rank, :rank]).copy(order="F")
    a_norm = float(np.abs(cov[np.ix_(kept, kept)]).sum(axis=0).max())
    rcond, info = cholesky_rcond(L11, a_norm)
    # written so that a NaN (an infinite norm) also falls back to the eigen path
    if info != 0 or not (rcond >= CHOLESKY_MIN_RCOND and rcond * (a_norm / anorm) >= 1e2 * eps):
        return None
    # N = P [-L11^{-T} L21^T; I] spans the null space, Q is its orthonormal basis, and
    # L11^{-1} ((x - Q Q^T x)[kept]) = L11^{-1} x[kept] - (L11^{-1} Q[kept]) (Q^T x)
    m = d - rank
    null = np.zeros((d, m))
    null[kept] = -solve_triangular(L11, L21.T, lower=True, trans="T")
    null[rest] = np.eye(m)
    Q = np.linalg.qr(null)[0]
    shift = solve_triangular(L11, Q[kept], lower=True)  # (r, m)
    return CholeskySolution("pivoted-cholesky", L11, kept=kept, null_basis=Q, shift=shift,
                            n_dropped=m)
