"""The whitening estimator (WhiteningBERT Eq. 1; BERT-whitening, Su et al. 2021).

``Whitening`` is a scikit-learn transformer: ``x_hat = (x - mu) U D^{-1/2}`` where ``mu`` is the
mean of the fit embeddings and ``Sigma = U D U^T`` their covariance. It is fitted from
:class:`~sentvec.whitening.statistics.WhiteningStatistics` (mergeable float64 sums) by one of the
solvers of :mod:`sentvec.whitening.solvers`. Also here: the one validator of a whitening
dimension (:func:`check_n_components`) and :func:`whiten_keeping_zero_rows`.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from sentvec._io import atomic_directory, atomic_save_npy, atomic_write_json, load_npy
from sentvec._readers import read_json_object
from sentvec._validation import check_choice, check_float_range, check_positive_int
from sentvec.whitening.solvers import (
    DEFAULT_EPS,
    SOLVERS,
    CholeskySolution,
    cholesky_solution,
    eigen_solution,
)
from sentvec.whitening.statistics import WhiteningStatistics, is_dask_array, statistics_of_dask

__all__ = ["Whitening", "check_n_components", "whiten_rows", "whiten_keeping_zero_rows"]

_FORMAT = "sentvec-whitening"
_VERSION = 1
_CONFIG_FILE = "whitening.json"
_ARRAYS = ("mean", "components", "explained_variance", "scatter")


def check_n_components(
    n_components: Any, n_features: int | None = None, *, name: str = "n_components"
) -> int | None:
    """Validate a whitening dimension ``k``: None (keep all) or an integer in ``[1, n_features]``.

    The one check of ``k`` in sentvec: :class:`Whitening`, the STS scorer, the layer search and
    the CLI (``--n-components``, checked against the encoder's width before any forward pass)
    all call it.

    Parameters
    ----------
    n_components : int or None
    n_features : int, optional
        The width ``d`` of the vectors, when known.
    name : str
        The option's name in the message.

    Returns
    -------
    int or None

    Raises
    ------
    ValueError
        Not a positive integer, or above ``n_features``.
    """
    if n_components is None:
        return None
    k = check_positive_int(name, n_components)
    if n_features is not None and k > n_features:
        raise ValueError(
            f"{name}={k} is invalid; expected at most n_features={n_features} "
            f"(the vectors have {n_features} dimensions)"
        )
    return k


def _config_int(cfg: dict, key: str, minimum: int) -> int:
    """An integer field of a saved config (not a bool or float), at least ``minimum``."""
    v = cfg[key]
    if type(v) is not int or v < minimum:
        raise ValueError(f"{key}={v!r} is invalid; expected an integer >= {minimum}")
    return v


def _validate_rows(estimator: Any, X: Any, **kwargs: Any) -> np.ndarray:
    """scikit-learn's ``validate_data`` (float64 / float32 rows), with our own message for
    NaN or infinite values.

    scikit-learn's message for NaN ends with advice about ``HistGradientBoostingClassifier`` and
    imputers, which has nothing to do with whitening embeddings; it is replaced by one naming the
    rows and the likely cause.

    Raises
    ------
    ValueError
        As ``validate_data``; non-finite input says how many rows hold NaN / infinity.
    """
    try:
        return validate_data(estimator, X, dtype=[np.float64, np.float32], **kwargs)
    except ValueError as exc:
        text = str(exc)
        if "NaN" not in text and "infinity" not in text:
            raise
        try:
            arr = np.asarray(X, dtype=np.float64)
            bad = int((~np.isfinite(arr)).reshape(len(arr), -1).any(axis=1).sum())
            where = f"{bad} of {len(arr)} rows hold"
        except (TypeError, ValueError):
            where = "the input holds"
        raise ValueError(
            f"Whitening input must be finite: {where} NaN or infinite values "
            "(check the encoder's output, e.g. non-finite model weights)"
        ) from None


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
    solver : {"eigh", "cholesky"}, default "eigh"
        How ``W`` is computed (see :mod:`sentvec.whitening.solvers`). ``"eigh"``: Eq. 1's
        ``U_k D_k^{-1/2}``, components sorted by variance. ``"cholesky"``: ``W = L^{-T}``
        (``Sigma = L L^T``), Eq. 1's whitening up to an orthogonal rotation, so every cosine,
        dot product and distance between whitened vectors is the same; several times faster to
        fit; defines no ``components_``. With ``n_components`` set, or for a singular or
        ill-conditioned covariance, it runs ``"eigh"``; ``solver_`` says which ran.
    warn_singular : bool, default True
        Warn when directions are dropped as numerically zero (``n_dropped_`` counts them either
        way; callers that fit in threads and report once set it False).

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
    solver_ : {"eigh", "cholesky"}
        The solver that produced the fit.
    statistics_ : WhiteningStatistics
        The float64 statistics the fit was computed from (``partial_fit`` continues from them).

    References
    ----------
    Huang et al., "WhiteningBERT: An Easy Unsupervised Sentence Embedding Approach",
    Findings of EMNLP 2021, Eq. 1. Su et al., "Whitening Sentence Representations for Better
    Semantics and Faster Retrieval", 2021 (dimension reduction by keeping the first k columns).
    """

    def __init__(
        self,
        n_components: int | None = None,
        *,
        eps: float = DEFAULT_EPS,
        solver: str = "eigh",
        warn_singular: bool = True,
    ) -> None:
        self.n_components = n_components
        self.eps = eps
        self.solver = solver
        self.warn_singular = warn_singular

    # ----------------------------------------------------------------- fitting
    def fit(self, X: Any, y: Any = None, *, sample_weight: Any = None) -> Whitening:
        """Fit ``mu`` and ``Sigma`` on the rows of ``X``.

        Parameters
        ----------
        X : array-like or dask.array of shape (n_samples, n_features)
            A dask array is reduced block by block through :class:`WhiteningStatistics`.
        y : ignored
        sample_weight : array-like of shape (n_samples,) of non-negative int, optional
            Repeat counts (row ``i`` counts as ``sample_weight[i]`` identical rows).

        Returns
        -------
        self

        Raises
        ------
        ValueError
            Fewer than 2 rows, non-finite values, bad parameters, or all rows equal.
        """
        self._check_params()
        if is_dask_array(X):
            if sample_weight is not None:
                raise ValueError("sample_weight is not supported for a dask array")
            stats = statistics_of_dask(X)
        else:
            arr = _validate_rows(self, X, ensure_min_samples=2)
            stats = WhiteningStatistics.from_array(arr, sample_weight)
        return self.fit_statistics(stats)

    def fit_transform(self, X: Any, y: Any = None, *, sample_weight: Any = None) -> Any:
        """Fit on ``X`` and whiten the same rows, centring them once.

        Equal to ``fit(X).transform(X)`` up to rounding: the rows are centred in float64 for
        the statistics and whitened from those centred rows (for ``solver="cholesky"`` by a
        triangular solve in place, without forming ``W``). The result has ``X``'s dtype
        (float32 for float32 input, else float64); a dask array goes through ``fit`` and
        ``transform``.

        Parameters, raises
        ------------------
        As :meth:`fit`.

        Returns
        -------
        ndarray of shape (n_samples, n_components_)
        """
        if is_dask_array(X):
            return self.fit(X, sample_weight=sample_weight).transform(X)
        self._check_params()
        arr = _validate_rows(self, X, ensure_min_samples=2)
        counts = None
        if sample_weight is not None:
            counts = WhiteningStatistics.check_sample_weight(sample_weight, arr.shape[0])
        return self._fit_transform_rows(arr, counts)

    def _fit_transform_rows(self, arr: np.ndarray, counts: np.ndarray | None) -> np.ndarray:
        stats, centred = WhiteningStatistics._from_block(arr, counts)
        self.fit_statistics(stats)
        if self._cholesky is not None:
            Z = self._cholesky.apply_inplace(centred)
        else:
            Z = centred @ self.whitening_matrix_
        return Z.astype(np.float32) if arr.dtype == np.float32 else Z

    def partial_fit(self, X: Any, y: Any = None) -> Whitening:
        """Add the rows of ``X`` to the statistics and refit (same result as one ``fit``).

        Raises
        ------
        ValueError
            As :meth:`fit`; also when the feature count differs from earlier chunks or fewer
            than 2 rows have been seen in total (the estimator is then left unchanged).
        """
        self._check_params()
        previous = getattr(self, "statistics_", None)
        arr = _validate_rows(self, X, reset=previous is None)
        stats = WhiteningStatistics.from_array(arr)
        if previous is not None:
            stats = previous.merge(stats)
        return self.fit_statistics(stats)

    def fit_statistics(self, statistics: WhiteningStatistics) -> Whitening:
        """Fit from precomputed (e.g. merged per-partition) statistics.

        Raises
        ------
        ValueError
            Fewer than 2 rows summarised, bad parameters, or a zero covariance.
        """
        self._check_params()
        chol = None
        if self.solver == "cholesky" and self.n_components is None:
            chol = cholesky_solution(statistics, eps=self.eps)
        d = statistics.n_features
        if chol is not None:
            self._cholesky: CholeskySolution | None = chol
            self._whitening_matrix = None
            for name in ("components_", "explained_variance_", "explained_variance_ratio_"):
                self.__dict__.pop(name, None)
            self.solver_ = "cholesky"
            self.n_dropped_ = 0
        else:
            sol = eigen_solution(
                statistics, self.n_components, eps=self.eps, warn=self.warn_singular
            )
            self._cholesky = None
            self.solver_ = "eigh"
            self.components_ = sol.components
            self.explained_variance_ = sol.explained_variance
            self.explained_variance_ratio_ = sol.explained_variance / sol.total_variance
            self._whitening_matrix = sol.whitening_matrix
            self.n_dropped_ = sol.n_dropped
        self.statistics_ = statistics
        self.mean_ = statistics.mean.copy()
        self.n_components_ = d if chol is not None else int(self.components_.shape[0])
        self.n_features_in_ = d
        self.n_samples_seen_ = statistics.n_samples
        return self

    @property
    def whitening_matrix_(self) -> np.ndarray:
        """``W`` of shape (n_features, n_components_), float64: ``x_hat = (x - mu) W``.

        For the Cholesky solvers it is formed from the factor at each access (``transform``
        solves with the factor instead).
        """
        W = self.__dict__.get("_whitening_matrix")
        if W is None:
            chol = self.__dict__.get("_cholesky")
            if chol is None:
                raise AttributeError("whitening_matrix_ is set by fit")
            W = chol.whitening_matrix()  # not cached: fitted state only
        return W

    @classmethod
    def from_statistics(
        cls,
        statistics: WhiteningStatistics,
        n_components: int | None = None,
        *,
        eps: float = DEFAULT_EPS,
        solver: str = "eigh",
    ) -> Whitening:
        """Build a fitted ``Whitening`` from (merged) :class:`WhiteningStatistics`."""
        return cls(n_components, eps=eps, solver=solver).fit_statistics(statistics)

    def _check_params(self) -> None:
        check_n_components(self.n_components)
        check_float_range("eps", self.eps, low=0.0, high=1.0, high_inclusive=False)
        check_choice("solver", self.solver, SOLVERS)

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
            Wrong feature count, non-finite values, or whitened values beyond the dtype's
            range (an input far outside the fitted scale).
        """
        check_is_fitted(self, "mean_")
        if is_dask_array(X):
            if X.ndim != 2 or X.shape[1] != self.n_features_in_:
                raise ValueError(f"X has shape {X.shape}, expected (n, {self.n_features_in_})")
            if X.numblocks[1] != 1:
                X = X.rechunk({1: -1})
            dtype = np.float32 if X.dtype == np.float32 else np.float64
            return X.map_blocks(
                self._transform_array, dtype=dtype, chunks=(X.chunks[0], (self.n_components_,))
            )
        return self._transform_array(X)

    @property
    def _n_features_out(self) -> int:
        return int(self.n_components_)

    def _transform_array(self, X: Any) -> np.ndarray:
        arr = _validate_rows(self, X, reset=False)
        dtype = arr.dtype
        if self._cholesky is not None:  # a triangular solve with the factor, in float64
            Z = self._cholesky.apply_inplace(np.subtract(arr, self.mean_, dtype=np.float64))
            return Z.astype(np.float32) if dtype == np.float32 else Z
        with np.errstate(over="ignore"):  # an overflowing cast is handled just below
            mean, W = self.mean_.astype(dtype), self.whitening_matrix_.astype(dtype)
            if dtype == np.float32 and not (np.isfinite(W).all() and np.isfinite(mean).all()):
                # fitted on data of a scale beyond float32 (e.g. values near 1e-40, whose
                # whitening matrix holds values near 1e40): compute in float64, return float32
                Z = ((arr - self.mean_) @ self.whitening_matrix_).astype(np.float32)
            else:
                Z = (arr - mean) @ W
        if not np.isfinite(Z).all():  # finite input (checked): the values overflowed
            raise ValueError(
                f"the whitened vectors overflow {Z.dtype} (the input is far outside the scale "
                "the whitening was fitted on, or the fitted transform is corrupt); pass float64 "
                "input, or refit on data of this scale"
            )
        return Z

    # ------------------------------------------------------------- save / load
    def save(self, path: Any) -> None:
        """Write the fitted transform to directory ``path`` (no pickle).

        Files: ``whitening.json`` (format, version, parameters, counts) and ``mean.npy``,
        ``components.npy``, ``explained_variance.npy``, ``scatter.npy`` (float64); for
        ``solver="cholesky"`` only ``mean.npy`` and ``scatter.npy`` (the factor is recomputed
        from them by :meth:`load`, deterministically). The directory
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
        check_is_fitted(self, "mean_")
        arrays = {"mean": self.mean_, "scatter": self.statistics_.scatter}
        if self.solver_ == "eigh":
            arrays.update(components=self.components_, explained_variance=self.explained_variance_)
        with atomic_directory(path, marker=_CONFIG_FILE, kind="a saved Whitening") as root:
            for name, arr in arrays.items():
                atomic_save_npy(root / f"{name}.npy", np.asarray(arr, dtype=np.float64))
            atomic_write_json(
                root / _CONFIG_FILE,
                {
                    "format": _FORMAT,
                    "version": _VERSION,
                    "params": {
                        "n_components": self.n_components,
                        "eps": float(self.eps),
                        "solver": self.solver,
                        "warn_singular": bool(self.warn_singular),
                    },
                    "n_features_in": int(self.n_features_in_),
                    "n_components": int(self.n_components_),
                    "n_samples_seen": int(self.n_samples_seen_),
                    "n_dropped": int(self.n_dropped_),
                    "covariance": "normalised by N",
                },
            )

    @classmethod
    def load(cls, path: Any) -> Whitening:
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
        solver = params.get("solver", "eigh")
        names = _ARRAYS if solver == "eigh" else ("mean", "scatter")
        arrays = {name: load_npy(root / f"{name}.npy") for name in names}
        expected = {
            "mean": (d,),
            "components": (k, d),
            "explained_variance": (k,),
            "scatter": (d, d),
        }
        expected = {name: expected[name] for name in names}
        for name, shape in expected.items():
            arr = arrays[name]
            if arr.shape != shape or arr.dtype != np.float64 or not np.isfinite(arr).all():
                raise ValueError(
                    f"{str(root / (name + '.npy'))!r} is corrupt: shape {arr.shape} dtype "
                    f"{arr.dtype}, expected {shape} float64 with finite values"
                )
        try:
            obj = cls(
                params.get("n_components"),
                eps=params.get("eps", DEFAULT_EPS),
                solver=solver,
                warn_singular=params.get("warn_singular", True),
            )
            obj._check_params()
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{str(cfg_path)!r} is not a valid Whitening config: {exc}") from exc
        statistics = WhiteningStatistics(n, arrays["mean"], arrays["scatter"])
        if solver != "eigh":
            with warnings.catch_warnings():  # the fit warned when it was made
                warnings.simplefilter("ignore", UserWarning)
                obj.fit_statistics(statistics)
            if obj.n_components_ != k or obj.n_dropped_ != n_dropped:
                raise ValueError(
                    f"{str(root)!r} is corrupt: its statistics give "
                    f"{obj.n_components_} components, the config says {k}"
                )
            return obj
        if not (arrays["explained_variance"] > 0).all():
            raise ValueError(f"{str(root)!r}: explained_variance.npy must be positive")
        obj.statistics_ = statistics
        obj.solver_ = "eigh"
        obj._cholesky = None
        obj.mean_ = arrays["mean"]
        obj.components_ = arrays["components"]
        obj.explained_variance_ = arrays["explained_variance"]
        obj.explained_variance_ratio_ = obj.explained_variance_ / float(
            np.trace(obj.statistics_.covariance)
        )
        obj._whitening_matrix = np.ascontiguousarray(
            arrays["components"].T / np.sqrt(arrays["explained_variance"])
        )
        obj.n_components_ = k
        obj.n_dropped_ = n_dropped
        obj.n_features_in_ = d
        obj.n_samples_seen_ = n
        return obj


def whiten_keeping_zero_rows(whitening: Any, X: np.ndarray) -> tuple[np.ndarray, int]:
    """``whitening.transform(X)`` as float32, except that all-zero rows of ``X`` stay all-zero.

    An all-zero encoder vector (an empty or out-of-vocabulary-only sentence) carries no
    information; whitening would map every such row to the same non-zero vector ``-mean_ @ W``,
    with cosine 1 to each other.

    Parameters
    ----------
    whitening : Whitening
        Fitted (anything with ``transform``).
    X : ndarray of shape (n, d)

    Returns
    -------
    Z : ndarray of shape (n, k), float32
    n_zero : int
        Number of all-zero rows of ``X`` (left zero in ``Z``).
    """
    zero = ~np.asarray(X).any(axis=1)
    Z = np.asarray(whitening.transform(X), dtype=np.float32)
    n_zero = int(zero.sum())
    if n_zero:
        Z[zero] = 0.0
    return Z, n_zero


def whiten_rows(
    X: np.ndarray,
    sample_weight: Any = None,
    *,
    n_components: int | None = None,
    eps: float = DEFAULT_EPS,
    solver: str = "cholesky",
    warn_singular: bool = False,
) -> tuple[np.ndarray, Whitening]:
    """Fit a whitening on the rows of ``X`` and return them whitened, with the fitted estimator.

    The arithmetic of ``Whitening(...).fit_transform(X, sample_weight=...)`` without
    scikit-learn's input validation, for callers that validated ``X`` themselves and run in
    threads (scikit-learn's checks use ``warnings.catch_warnings``, which is not thread-safe):
    the STS protocol's per-year whitening and the layer search.

    Parameters
    ----------
    X : ndarray of shape (n, d), float32 or float64, finite
    sample_weight : array-like of shape (n,) of non-negative int, optional
        Repeat counts.
    n_components, eps, solver, warn_singular
        As :class:`Whitening` (default ``solver="cholesky"``: the output is Eq. 1's up to a
        rotation, for cosines; no warning, ``n_dropped_`` counts dropped directions).

    Returns
    -------
    Z : ndarray of shape (n, n_components_), dtype of ``X``
    whitening : Whitening
        Fitted.

    Raises
    ------
    ValueError
        ``X`` is not a 2-D float32 / float64 array of at least 2 rows, bad weights or
        parameters, or a covariance :class:`Whitening` cannot whiten.
    """
    if (
        not isinstance(X, np.ndarray)
        or X.ndim != 2
        or X.dtype not in (np.float32, np.float64)
        or X.shape[0] < 2
    ):
        raise ValueError("X must be a 2-D float32 or float64 ndarray with at least 2 rows")
    w = Whitening(n_components, eps=eps, solver=solver, warn_singular=warn_singular)
    w._check_params()
    counts = None
    if sample_weight is not None:
        counts = WhiteningStatistics.check_sample_weight(sample_weight, X.shape[0])
    return w._fit_transform_rows(X, counts), w
