"""Mergeable float64 statistics of a set of embeddings: the input of every whitening solver.

:class:`WhiteningStatistics` holds ``(n, mean, centred scatter)``. Statistics of separate chunks
or partitions merge exactly (Chan, Golub & LeVeque, 1979), so ``partial_fit`` over chunks, a Dask
array or a hand-written map-reduce all give the same ``mu`` and ``Sigma`` as one fit on all rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from sentvec._validation import check_embeddings, check_positive_int

__all__ = ["WhiteningStatistics", "statistics_of_dask", "is_dask_array"]

_CHUNK_ROWS = 16384


@dataclass(frozen=True, eq=False)
class WhiteningStatistics:
    """Mergeable first- and second-order statistics of a set of embeddings (float64).

    Holds the count ``n_samples``, the mean ``mean`` and the centred scatter matrix
    ``scatter = sum_i (x_i - mean)(x_i - mean)^T``. This is equivalent to the raw sums
    ``(n, sum x, sum x x^T)`` (``sum x = n * mean``, ``sum x x^T = scatter + n * mean mean^T``,
    see :attr:`sum` and :attr:`sum_outer`) but merging centred scatters (Chan, Golub & LeVeque,
    1979) avoids the cancellation of ``sum x x^T - n mu mu^T`` when the mean is large compared
    with the spread, as it is for BERT embeddings.

    Parameters
    ----------
    n_samples : int
        Number of rows summarised (>= 0).
    mean : ndarray of shape (n_features,), float64
    scatter : ndarray of shape (n_features, n_features), float64, symmetric

    Examples
    --------
    Per-partition statistics merged in any order give the statistics of all rows:

    >>> a = WhiteningStatistics.from_array(X[:500])            # doctest: +SKIP
    >>> b = WhiteningStatistics.from_array(X[500:])            # doctest: +SKIP
    >>> Whitening().fit_statistics(a.merge(b))                 # doctest: +SKIP
    """

    n_samples: int
    mean: np.ndarray
    scatter: np.ndarray

    def __post_init__(self) -> None:
        mean = np.asarray(self.mean, dtype=np.float64)
        scatter = np.asarray(self.scatter, dtype=np.float64)
        if mean.ndim != 1 or scatter.shape != (mean.shape[0], mean.shape[0]):
            raise ValueError(
                f"inconsistent statistics: mean shape {mean.shape}, scatter shape {scatter.shape}"
            )
        n = self.n_samples
        if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)) or n < 0:
            raise ValueError(f"n_samples={n!r} is invalid; expected an integer >= 0")
        object.__setattr__(self, "n_samples", int(n))
        object.__setattr__(self, "mean", mean)
        object.__setattr__(self, "scatter", scatter)

    @property
    def n_features(self) -> int:
        return int(self.mean.shape[0])

    @property
    def sum(self) -> np.ndarray:
        """``sum_i x_i``, ndarray of shape (n_features,)."""
        return self.n_samples * self.mean

    @property
    def sum_outer(self) -> np.ndarray:
        """``sum_i x_i x_i^T``, ndarray of shape (n_features, n_features)."""
        return self.scatter + self.n_samples * np.outer(self.mean, self.mean)

    @property
    def covariance(self) -> np.ndarray:
        """Covariance normalised by N (``scatter / n_samples``), shape (n_features, n_features).

        Raises
        ------
        ValueError
            If no rows were summarised.
        """
        if self.n_samples == 0:
            raise ValueError("covariance of zero samples is undefined")
        return self.scatter / self.n_samples

    def _rounding_variance(self) -> float:
        """Variance that identical rows show after centring: the mean of n rows is off by up to
        about ``n * eps`` of their norm. A covariance no larger is zero (whitening it would
        only amplify rounding noise)."""
        noise = 4.0 * self.n_samples * np.finfo(np.float64).eps
        return noise * noise * float(self.mean @ self.mean)

    @classmethod
    def empty(cls, n_features: int) -> WhiteningStatistics:
        """Statistics of zero rows (the identity of :meth:`merge`)."""
        d = check_positive_int("n_features", n_features)
        return cls(0, np.zeros(d), np.zeros((d, d)))

    @classmethod
    def from_array(cls, X: Any, sample_weight: Any = None) -> WhiteningStatistics:
        """Statistics of the rows of ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Any float dtype; accumulated in float64, in row chunks of 16,384 to bound memory.
        sample_weight : array-like of shape (n_samples,) of non-negative int, optional
            Repeat counts: row ``i`` counts as ``sample_weight[i]`` identical rows (so the
            statistics equal those of ``np.repeat(X, sample_weight, axis=0)``).

        Raises
        ------
        ValueError
            If ``X`` is not 2-D, has no rows, holds NaN or infinity, or the weights are not
            non-negative integers of the right length with a positive sum.
        """
        arr = check_embeddings(X, min_rows=1)
        weights = None
        if sample_weight is not None:
            weights = cls.check_sample_weight(sample_weight, arr.shape[0])
        total = cls.empty(arr.shape[1])
        for start in range(0, arr.shape[0], _CHUNK_ROWS):
            chunk = arr[start : start + _CHUNK_ROWS]
            cw = None if weights is None else weights[start : start + _CHUNK_ROWS]
            if cw is not None and cw.sum() == 0:
                continue
            stats, _ = cls._from_block(chunk, cw)
            total = total.merge(stats)
        return total

    @staticmethod
    def check_sample_weight(sample_weight: Any, n_samples: int) -> np.ndarray:
        """Validated repeat counts: ndarray of shape (n_samples,), int64.

        Whole-number floats are counts (scikit-learn passes float weights) and a boolean array
        is a row mask (1 keeps a row, 0 drops it).

        Raises
        ------
        ValueError
            Not non-negative integers, one per row, with a positive sum below 2**63.
        """
        w = np.asarray(sample_weight)
        if w.dtype == np.bool_:
            w = w.astype(np.int64)  # a row mask: True keeps a row once, False drops it
        if (
            w.dtype.kind == "f"
            and w.shape == (n_samples,)
            and np.isfinite(w).all()
            and (w == np.round(w)).all()
            and (np.abs(w) < 2.0**62).all()
        ):
            w = w.astype(np.int64)  # whole-number floats (scikit-learn's weights) are counts
        if (
            w.shape != (n_samples,)
            or not np.issubdtype(w.dtype, np.integer)
            or (w < 0).any()
            or not 0 < _exact_total(w) <= np.iinfo(np.int64).max
        ):
            zero = (
                " (all weights are zero)"
                if w.shape == (n_samples,)
                and w.size
                and np.issubdtype(w.dtype, np.number)
                and not np.asarray(w).any()
                else ""
            )
            raise ValueError(
                "sample_weight must be non-negative integers (repeat counts), one "
                f"per row, with a positive sum below 2**63{zero}"
            )
        return w.astype(np.int64)

    @classmethod
    def _from_block(
        cls,
        X: np.ndarray,
        counts: np.ndarray | None,
        *,
        out: np.ndarray | None = None,
        work: np.ndarray | None = None,
    ) -> tuple[WhiteningStatistics, np.ndarray]:
        """Statistics of one validated block, and its centred rows ``X - mean`` (float64).

        ``X``: float32 or float64 rows, read in place (sums are accumulated in float64 without
        a float64 copy of ``X``). ``counts``: integer repeat counts with a positive sum, or
        None. The weighted scatter is the scatter of the rows with a positive count (one BLAS
        syrk) plus ``sum (c_i - 1) x_i x_i^T`` over the rows counted more than once, or, when
        more than 1/8 of the rows repeat, one syrk of the rows scaled by ``sqrt(c_i)``.
        Returning the centred rows lets a caller that transforms the same rows (the per-year
        STS whitening) skip a second centring pass. ``out`` / ``work``: optional C-ordered
        float64 arrays of ``X``'s shape that receive the centred rows (returned) and the scaled
        copy of the many-repeats case, instead of new arrays.
        """
        if counts is None:
            n = X.shape[0]
            mean = X.sum(axis=0, dtype=np.float64) / n
        else:
            n = int(counts.sum())
            positive = counts > 0
            extra = counts > 1
            once = X if positive.all() else X[positive]
            total = once.sum(axis=0, dtype=np.float64)
            if extra.any():
                total += (counts[extra] - 1).astype(np.float64) @ X[extra].astype(np.float64)
            mean = total / n
        centred = np.subtract(X, mean, dtype=np.float64, out=out)
        # values beyond ~1e154 overflow here: Whitening then raises a clear error, so numpy's
        # own overflow warning would only be noise
        with np.errstate(over="ignore", invalid="ignore"):
            # A.T @ A of one buffer: numpy calls BLAS syrk (half the flops of a general GEMM)
            if counts is None:
                scatter = centred.T @ centred
            elif 8 * int(extra.sum()) > X.shape[0]:
                # many repeated rows (SICK reuses sentences): one syrk of the rows scaled by
                # sqrt(count)
                scaled = np.multiply(centred, np.sqrt(counts.astype(np.float64))[:, None], out=work)
                scatter = scaled.T @ scaled
            else:
                base = centred if positive.all() else centred[positive]
                scatter = base.T @ base
                if extra.any():
                    E = centred[extra] * np.sqrt(counts[extra] - 1.0)[:, None]
                    scatter += E.T @ E
        return cls(n, mean, scatter), centred

    def merge(self, other: WhiteningStatistics) -> WhiteningStatistics:
        """Statistics of the union of both row sets (order-independent up to rounding).

        Raises
        ------
        TypeError
            If ``other`` is not a :class:`WhiteningStatistics`.
        ValueError
            If the feature counts differ.
        """
        if not isinstance(other, WhiteningStatistics):
            raise TypeError(f"can only merge WhiteningStatistics, got {type(other).__name__}")
        if other.n_features != self.n_features:
            raise ValueError(
                f"cannot merge statistics of {self.n_features} and {other.n_features} features"
            )
        if other.n_samples == 0:
            return self
        if self.n_samples == 0:
            return other
        n = self.n_samples + other.n_samples
        delta = other.mean - self.mean
        mean = self.mean + delta * (other.n_samples / n)
        scatter = (
            self.scatter
            + other.scatter
            + np.outer(delta, delta) * (self.n_samples * other.n_samples / n)
        )
        return WhiteningStatistics(n, mean, scatter)

    __add__ = merge

    def __radd__(self, other: Any) -> WhiteningStatistics:
        # sum([a, b, ...]) starts from 0
        if isinstance(other, int) and not isinstance(other, bool) and other == 0:
            return self
        return NotImplemented


def _exact_total(w: np.ndarray) -> int:
    """Sum of non-negative integer weights without the wrap-around of an int64/uint64 sum."""
    if w.size == 0:
        return 0
    if int(w.max()) <= np.iinfo(np.int64).max // w.size:  # the int64 sum cannot overflow
        return int(w.sum(dtype=np.int64))
    return sum(int(x) for x in w)


def _block_statistics(block: Any, n_features: int) -> WhiteningStatistics:
    """Statistics of one block of rows; an empty block gives the empty statistics."""
    if np.shape(block)[0] == 0:
        return WhiteningStatistics.empty(n_features)
    return WhiteningStatistics.from_array(block)


def statistics_of_dask(X: Any) -> WhiteningStatistics:
    """Statistics of a 2-D ``dask.array``: per-block statistics merged by a pairwise tree.

    Raises
    ------
    ValueError
        ``X`` is not 2-D or has fewer than 2 rows.
    """
    import dask

    if X.ndim != 2:
        raise ValueError(f"X must be 2-D (n_samples, n_features), got shape {X.shape}")
    if X.numblocks[1] != 1:
        X = X.rechunk({1: -1})
    if X.shape[0] < 2:
        raise ValueError(f"X needs at least 2 rows to estimate a covariance, got {X.shape[0]}")
    blocks = X.to_delayed().ravel()
    # row counts may be unknown (NaN, e.g. after boolean masking): such blocks are kept, and an
    # empty one contributes nothing; at least 2 rows in all is checked by the fit
    parts = [
        dask.delayed(_block_statistics)(b, X.shape[1])
        for b, size in zip(blocks, X.chunks[0], strict=True)
        if not size == 0
    ]
    merge = dask.delayed(WhiteningStatistics.merge)
    while len(parts) > 1:
        nxt = [merge(parts[i], parts[i + 1]) for i in range(0, len(parts) - 1, 2)]
        if len(parts) % 2:
            nxt.append(parts[-1])
        parts = nxt
    (stats,) = dask.compute(parts[0])
    return stats


def is_dask_array(X: Any) -> bool:
    """True for a ``dask.array.Array`` (checked without importing dask)."""
    return type(X).__module__.split(".")[0] == "dask" and hasattr(X, "to_delayed")
