"""Whitening of sentence embeddings (WhiteningBERT Eq. 1; BERT-whitening, Su et al. 2021).

``Whitening`` is a scikit-learn transformer: ``x_hat = (x - mu) U D^{-1/2}`` where ``mu`` is the
mean of the fit embeddings and ``Sigma = U D U^T`` their covariance. The statistics behind it
(count, mean, centred scatter matrix) are kept in float64 in a small mergeable object,
:class:`WhiteningStatistics`, so that ``partial_fit`` over chunks, a Dask array or a hand-written
map-reduce all give the same ``mu`` and ``Sigma`` as one ``fit`` on all rows.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from sentvec._io import (
    atomic_directory,
    atomic_save_npy,
    atomic_write_json,
    load_npy,
    read_json_object,
)
from sentvec._numeric import MIN_VARIANCE
from sentvec._validation import check_embeddings, check_float_range, check_positive_int

__all__ = ["Whitening", "WhiteningStatistics", "DEFAULT_EPS"]

#: Default relative tolerance below which an eigen-direction of Sigma counts as numerically zero.
DEFAULT_EPS = 1e-10

_FORMAT = "sentvec-whitening"
_VERSION = 1
_CONFIG_FILE = "whitening.json"
_ARRAYS = ("mean", "components", "explained_variance", "scatter")
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
    def empty(cls, n_features: int) -> "WhiteningStatistics":
        """Statistics of zero rows (the identity of :meth:`merge`)."""
        d = check_positive_int("n_features", n_features)
        return cls(0, np.zeros(d), np.zeros((d, d)))

    @classmethod
    def from_array(cls, X: Any, sample_weight: Any = None) -> "WhiteningStatistics":
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
            w = np.asarray(sample_weight)
            if (w.shape != (arr.shape[0],) or not np.issubdtype(w.dtype, np.integer)
                    or (w < 0).any() or not 0 < _exact_total(w) <= np.iinfo(np.int64).max):
                raise ValueError("sample_weight must be non-negative integers, one per row, "
                                 "with a positive sum below 2**63")
            weights = w.astype(np.int64)
        total = cls.empty(arr.shape[1])
        for start in range(0, arr.shape[0], _CHUNK_ROWS):
            chunk = arr[start:start + _CHUNK_ROWS]
            cw = None if weights is None else weights[start:start + _CHUNK_ROWS]
            if cw is not None and cw.sum() == 0:
                continue
            stats, _ = cls._from_block(chunk, cw)
            total = total.merge(stats)
        return total

    @classmethod
    def _from_block(cls, X: np.ndarray, counts: np.ndarray | None, *,
                    out: np.ndarray | None = None, work: np.ndarray | None = None
                    ) -> tuple["WhiteningStatistics", np.ndarray]:
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
                scaled = np.multiply(centred, np.sqrt(counts.astype(np.float64))[:, None],
                                     out=work)
                scatter = scaled.T @ scaled
            else:
                base = centred if positive.all() else centred[positive]
                scatter = base.T @ base
                if extra.any():
                    E = centred[extra] * np.sqrt(counts[extra] - 1.0)[:, None]
                    scatter += E.T @ E
        return cls(n, mean, scatter), centred

    def merge(self, other: "WhiteningStatistics") -> "WhiteningStatistics":
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
        scatter = self.scatter + other.scatter + np.outer(delta, delta) * (
            self.n_samples * other.n_samples / n)
        return WhiteningStatistics(n, mean, scatter)

    __add__ = merge

    def __radd__(self, other: Any) -> "WhiteningStatistics":
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


def _config_int(cfg: dict, key: str, minimum: int) -> int:
    """An integer field of a saved config (not a bool or float), at least ``minimum``."""
    v = cfg[key]
    if type(v) is not int or v < minimum:
        raise ValueError(f"{key}={v!r} is invalid; expected an integer >= {minimum}")
    return v


def _block_statistics(block: Any, n_features: int) -> WhiteningStatistics:
    """Statistics of one block of rows; an empty block gives the empty statistics."""
    if np.shape(block)[0] == 0:
        return WhiteningStatistics.empty(n_features)
    return WhiteningStatistics.from_array(block)


def _statistics_of_dask(X: Any) -> WhiteningStatistics:
    """Per-block statistics of a dask array, merged by a pairwise tree reduction."""
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
    parts = [dask.delayed(_block_statistics)(b, X.shape[1])
             for b, size in zip(blocks, X.chunks[0]) if not size == 0]
    merge = dask.delayed(WhiteningStatistics.merge)
    while len(parts) > 1:
        nxt = [merge(parts[i], parts[i + 1]) for i in range(0, len(parts) - 1, 2)]
        if len(parts) % 2:
            nxt.append(parts[-1])
        parts = nxt
    (stats,) = dask.compute(parts[0])
    return stats


def _is_dask_array(X: Any) -> bool:
    return type(X).__module__.split(".")[0] == "dask" and hasattr(X, "to_delayed")


class Whitening(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """Whitening transform of sentence embeddings, optionally reducing the dimension.

    Fits ``mu`` (mean) and ``Sigma = U D U^T`` (covariance **normalised by N**, the number of fit
    rows) and maps ``x -> (x - mu) U_k D_k^{-1/2}``, keeping the ``k`` largest-variance
    directions, largest first (WhiteningBERT Eq. 1; BERT-whitening keeps the first ``k`` columns).
    The authors use the unnormalised scatter ``(E - mu)^T (E - mu)``; that only multiplies every
    output by ``sqrt(N)``, which does not change cosine similarities.

    Singular covariance (N <= d, repeated rows): eigen-directions with eigenvalue
    ``<= eps * largest eigenvalue`` are numerically zero; dividing by them would give values of
    1e8 or inf. They are **dropped**, never clipped: the output then has fewer columns than
    requested (``n_components_``), and a ``UserWarning`` says how many directions were dropped.
    Dropping (rather than clipping at ``eps``) keeps new, out-of-sample rows bounded too.

    Parameters
    ----------
    n_components : int, optional
        Number of directions kept (``k``, 1 <= k <= n_features); ``None`` keeps all of them.
    eps : float, default 1e-10
        Relative eigenvalue tolerance in [0, 1) for treating a direction as numerically zero.

    Attributes
    ----------
    mean_ : ndarray of shape (n_features,), float64
    components_ : ndarray of shape (n_components_, n_features), float64
        Unit eigenvectors of ``Sigma`` (rows), largest eigenvalue first. Signs are deterministic:
        the largest-magnitude entry of each row is positive (like scikit-learn's ``svd_flip``).
    explained_variance_ : ndarray of shape (n_components_,), float64
        The kept eigenvalues of ``Sigma`` (variance along each component).
    explained_variance_ratio_ : ndarray of shape (n_components_,), float64
    whitening_matrix_ : ndarray of shape (n_features, n_components_), float64
        ``U_k D_k^{-1/2}``, the matrix ``W`` in ``x_hat = (x - mu) W``.
    n_components_ : int
        Number of output columns actually produced.
    n_dropped_ : int
        Number of requested directions dropped as numerically zero.
    n_features_in_ : int
    n_samples_seen_ : int
    statistics_ : WhiteningStatistics
        The float64 statistics the fit was computed from (``partial_fit`` continues from them).

    References
    ----------
    Huang et al., "WhiteningBERT: An Easy Unsupervised Sentence Embedding Approach",
    Findings of EMNLP 2021, Eq. 1. Su et al., "Whitening Sentence Representations for Better
    Semantics and Faster Retrieval", 2021 (dimension reduction by keeping the first k columns).
    """

    def __init__(self, n_components: int | None = None, *, eps: float = DEFAULT_EPS) -> None:
        self.n_components = n_components
        self.eps = eps

    # ----------------------------------------------------------------- fitting
    def fit(self, X: Any, y: Any = None) -> "Whitening":
        """Fit ``mu`` and ``Sigma`` on the rows of ``X``.

        Parameters
        ----------
        X : array-like or dask.array of shape (n_samples, n_features)
            A dask array is reduced block by block through :class:`WhiteningStatistics`.
        y : ignored

        Returns
        -------
        self

        Raises
        ------
        ValueError
            Fewer than 2 rows, non-finite values, bad ``n_components``/``eps``, or all rows equal.
        """
        self._check_params()
        if _is_dask_array(X):
            stats = _statistics_of_dask(X)
        else:
            arr = validate_data(self, X, dtype=[np.float64, np.float32], ensure_min_samples=2)
            stats = WhiteningStatistics.from_array(arr)
        return self.fit_statistics(stats)

    def partial_fit(self, X: Any, y: Any = None) -> "Whitening":
        """Add the rows of ``X`` to the statistics and refit (same result as one ``fit``).

        Raises
        ------
        ValueError
            As :meth:`fit`; also when the feature count differs from earlier chunks or fewer
            than 2 rows have been seen in total (the estimator is then left unchanged).
        """
        self._check_params()
        previous = getattr(self, "statistics_", None)
        arr = validate_data(self, X, dtype=[np.float64, np.float32], reset=previous is None)
        stats = WhiteningStatistics.from_array(arr)
        if previous is not None:
            stats = previous.merge(stats)
        return self.fit_statistics(stats)

    def fit_statistics(self, statistics: WhiteningStatistics) -> "Whitening":
        """Fit from precomputed (e.g. merged per-partition) statistics.

        Raises
        ------
        ValueError
            Fewer than 2 rows summarised, bad parameters, or a zero covariance.
        """
        return self._fit_statistics(statistics, warn=True)

    def _fit_statistics(self, statistics: WhiteningStatistics, *, warn: bool) -> "Whitening":
        # warn=False: the caller reports dropped directions itself (n_dropped_), e.g. per-year
        # STS whitening run in worker threads, where warnings.catch_warnings is not thread-safe
        self._check_params()
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
        d = statistics.n_features
        k = d if self.n_components is None else self.n_components
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
        rank = int(np.count_nonzero(evals > self.eps * top))
        kept = min(k, rank)
        self.n_dropped_ = k - kept
        if self.n_dropped_ and warn:
            warnings.warn(
                f"Whitening: the covariance of {statistics.n_samples} rows x {d} features is "
                f"singular (numerical rank {rank}, eigenvalues <= eps*max = {self.eps:g}*{top:.3g} "
                f"treated as zero); dropped {self.n_dropped_} of the {k} requested directions, "
                f"so the output has {kept} columns instead of {k}",
                UserWarning, stacklevel=4,
            )
        self.statistics_ = statistics
        self.mean_ = statistics.mean.copy()
        self.components_ = np.ascontiguousarray(evecs[:, :kept].T)
        self.explained_variance_ = evals[:kept].copy()
        self.explained_variance_ratio_ = self.explained_variance_ / float(np.trace(cov))
        self.whitening_matrix_ = np.ascontiguousarray(
            evecs[:, :kept] / np.sqrt(self.explained_variance_))
        self.n_components_ = kept
        self.n_features_in_ = d
        self.n_samples_seen_ = statistics.n_samples
        return self

    @classmethod
    def from_statistics(cls, statistics: WhiteningStatistics, n_components: int | None = None, *,
                        eps: float = DEFAULT_EPS) -> "Whitening":
        """Build a fitted ``Whitening`` from (merged) :class:`WhiteningStatistics`."""
        return cls(n_components, eps=eps).fit_statistics(statistics)

    def _check_params(self) -> None:
        if self.n_components is not None:
            check_positive_int("n_components", self.n_components)
        check_float_range("eps", self.eps, low=0.0, high=1.0, high_inclusive=False)

    # --------------------------------------------------------------- transform
    def transform(self, X: Any) -> Any:
        """Whiten the rows of ``X``: ``(X - mean_) @ whitening_matrix_``.

        Parameters
        ----------
        X : array-like or dask.array of shape (n_samples, n_features_in_)

        Returns
        -------
        ndarray of shape (n_samples, n_components_)
            float32 for float32 input, float64 otherwise (a lazy dask array for dask input).

        Raises
        ------
        sklearn.exceptions.NotFittedError
            Before ``fit``.
        ValueError
            Wrong feature count or non-finite values.
        """
        check_is_fitted(self, "whitening_matrix_")
        if _is_dask_array(X):
            if X.ndim != 2 or X.shape[1] != self.n_features_in_:
                raise ValueError(f"X has shape {X.shape}, expected (n, {self.n_features_in_})")
            if X.numblocks[1] != 1:
                X = X.rechunk({1: -1})
            dtype = np.float32 if X.dtype == np.float32 else np.float64
            return X.map_blocks(self._transform_array, dtype=dtype,
                                chunks=(X.chunks[0], (self.n_components_,)))
        return self._transform_array(X)

    @property
    def _n_features_out(self) -> int:
        return int(self.n_components_)

    def _transform_array(self, X: Any) -> np.ndarray:
        arr = validate_data(self, X, dtype=[np.float64, np.float32], reset=False)
        dtype = arr.dtype
        with np.errstate(over="ignore"):  # an overflowing cast is handled just below
            mean, W = self.mean_.astype(dtype), self.whitening_matrix_.astype(dtype)
        if dtype == np.float32 and not (np.isfinite(W).all() and np.isfinite(mean).all()):
            # fitted on data of a scale beyond float32 (e.g. values near 1e-40, whose whitening
            # matrix holds values near 1e40): compute in float64, return float32 as documented
            return ((arr - self.mean_) @ self.whitening_matrix_).astype(np.float32)
        return (arr - mean) @ W

    # ------------------------------------------------------------- save / load
    def save(self, path: Any) -> None:
        """Write the fitted transform to directory ``path`` (no pickle).

        Files: ``whitening.json`` (format, version, parameters, counts) and ``mean.npy``,
        ``components.npy``, ``explained_variance.npy``, ``scatter.npy`` (float64). The directory
        is built under a temporary name and renamed into place; ``path`` may be missing, an
        empty directory or a saved Whitening (one holding ``whitening.json``), which is replaced
        as a whole.

        Raises
        ------
        sklearn.exceptions.NotFittedError
            Before ``fit``.
        FileExistsError
            If ``path`` is a file or a non-empty directory that is not a saved Whitening (a
            saved pipeline, say); nothing is written.
        ValueError
            If ``path`` cannot be replaced by a rename (the working directory or one of its
            parents, a filesystem root, a mount point); nothing is written.
        """
        check_is_fitted(self, "whitening_matrix_")
        arrays = {"mean": self.mean_, "components": self.components_,
                  "explained_variance": self.explained_variance_,
                  "scatter": self.statistics_.scatter}
        with atomic_directory(path, marker=_CONFIG_FILE, kind="a saved Whitening") as root:
            for name, arr in arrays.items():
                atomic_save_npy(root / f"{name}.npy", np.asarray(arr, dtype=np.float64))
            atomic_write_json(root / _CONFIG_FILE, {
                "format": _FORMAT, "version": _VERSION,
                "params": {"n_components": self.n_components, "eps": float(self.eps)},
                "n_features_in": int(self.n_features_in_),
                "n_components": int(self.n_components_),
                "n_samples_seen": int(self.n_samples_seen_), "n_dropped": int(self.n_dropped_),
                "covariance": "normalised by N",
            })

    @classmethod
    def load(cls, path: Any) -> "Whitening":
        """Read a directory written by :meth:`save`.

        Raises
        ------
        FileNotFoundError
            If the directory, ``whitening.json`` or an array file is missing.
        ValueError
            If a file is corrupt or the arrays' shapes disagree with the JSON.
        """
        root = Path(path)
        cfg_path = root / _CONFIG_FILE
        if not cfg_path.is_file():
            raise FileNotFoundError(f"no {_CONFIG_FILE} in {str(root)!r}: not a saved Whitening")
        try:
            cfg = read_json_object(cfg_path)
            if cfg.get("format") != _FORMAT:
                raise ValueError(f"format is {cfg.get('format')!r}, expected {_FORMAT!r}")
            version = cfg.get("version")
            if type(version) is not int or version != _VERSION:  # not True, not 1.0
                raise ValueError(f"unsupported version {version!r}")
            params = cfg["params"]
            if not isinstance(params, dict):
                raise ValueError(f"params is a {type(params).__name__}, expected an object")
            d = _config_int(cfg, "n_features_in", 1)
            k = _config_int(cfg, "n_components", 1)
            n = _config_int(cfg, "n_samples_seen", 2)
            n_dropped = _config_int(cfg, "n_dropped", 0)
            if k > d:
                raise ValueError(f"n_components={k} exceeds n_features_in={d}")
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ValueError(f"{str(cfg_path)!r} is not a valid Whitening config: {exc}") from exc
        arrays = {name: load_npy(root / f"{name}.npy") for name in _ARRAYS}
        expected = {"mean": (d,), "components": (k, d), "explained_variance": (k,),
                    "scatter": (d, d)}
        for name, shape in expected.items():
            arr = arrays[name]
            if arr.shape != shape or arr.dtype != np.float64 or not np.isfinite(arr).all():
                raise ValueError(
                    f"{str(root / (name + '.npy'))!r} is corrupt: shape {arr.shape} dtype "
                    f"{arr.dtype}, expected {shape} float64 with finite values")
        if not (arrays["explained_variance"] > 0).all():
            raise ValueError(f"{str(root)!r}: explained_variance.npy must be positive")
        obj = cls(params.get("n_components"), eps=params.get("eps", DEFAULT_EPS))
        obj._check_params()
        obj.statistics_ = WhiteningStatistics(n, arrays["mean"], arrays["scatter"])
        obj.mean_ = arrays["mean"]
        obj.components_ = arrays["components"]
        obj.explained_variance_ = arrays["explained_variance"]
        obj.explained_variance_ratio_ = obj.explained_variance_ / float(
            np.trace(obj.statistics_.covariance))
        obj.whitening_matrix_ = np.ascontiguousarray(
            arrays["components"].T / np.sqrt(arrays["explained_variance"]))
        obj.n_components_ = k
        obj.n_dropped_ = n_dropped
        obj.n_features_in_ = d
        obj.n_samples_seen_ = n
        return obj
