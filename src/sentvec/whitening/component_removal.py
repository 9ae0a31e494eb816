"""Removing dominant directions: all-but-the-top (ABTT) and SIF / uSIF common-component removal.

Two scikit-learn transformers beside :class:`~sentvec.whitening.Whitening`, fitted from the
same mergeable :class:`~sentvec.whitening.statistics.WhiteningStatistics`:

* :class:`AllButTheTop` (Mu & Viswanath, ICLR 2018, Algorithm 1): subtract the mean, then the
  projections on the top ``D`` principal components of the **centred** vectors (eigenvectors of
  the scatter matrix).
* :class:`CommonComponentRemoval` (Arora, Liang & Ma, ICLR 2017, Algorithm 1 line 3-5;
  Ethayarajh 2018, Algorithm 1): remove the projections on the top right singular vectors of
  the **uncentred** sentence matrix ``X`` (eigenvectors of ``X^T X``, the statistics'
  ``sum_outer``), each fully (SIF) or weighted by its squared singular value's share (uSIF).

:func:`load_postprocessor` reads any saved post-processor directory (these two and
``Whitening``); :data:`POSTPROCESSOR_TYPES` names each by its ``postprocessor_type``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import scipy.linalg
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from sentvec._io import atomic_directory, atomic_save_npy, atomic_write_json, load_npy
from sentvec._readers import read_json_object
from sentvec._validation import check_choice, check_positive_int
from sentvec.whitening.estimator import Whitening
from sentvec.whitening.statistics import WhiteningStatistics

__all__ = [
    "AllButTheTop",
    "CommonComponentRemoval",
    "POSTPROCESSOR_TYPES",
    "load_postprocessor",
    "postprocessor_type_of",
    "default_abtt_components",
    "COMPONENT_WEIGHTINGS",
]

_CONFIG_FILE = "component_removal.json"
_WHITENING_FILE = "whitening.json"
_VERSION = 1

#: How :class:`CommonComponentRemoval` weights each removed component.
COMPONENT_WEIGHTINGS = ("full", "singular-value-share")


def default_abtt_components(n_features: int) -> int:
    """Mu & Viswanath's rule of thumb ``D ~ d / 100`` (at least 1): ``max(1, round(d / 100))``."""
    return max(1, int(round(check_positive_int("n_features", n_features) / 100)))


def _top_eigenvectors(matrix: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` largest eigenvalues (descending, clipped at 0) of a symmetric matrix and their
    unit eigenvectors as rows, each with its largest-magnitude entry positive (deterministic
    signs, as ``Whitening.components_``)."""
    d = matrix.shape[0]
    vals, vecs = scipy.linalg.eigh(matrix, subset_by_index=[d - k, d - 1])
    vals, vecs = vals[::-1], vecs[:, ::-1].T.copy()
    rows = np.arange(k)
    signs = np.sign(vecs[rows, np.argmax(np.abs(vecs), axis=1)])
    vecs *= np.where(signs == 0, 1.0, signs)[:, None]
    return np.maximum(vals, 0.0), vecs


class _ComponentRemoval(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """Shared fit / transform / save / load of the two removal transforms (this module only)."""

    _FORMAT = ""
    postprocessor_type = ""
    _centred = True

    def _check_params(self) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    def _weights(self, values: np.ndarray) -> np.ndarray:
        return np.ones_like(values)

    # ------------------------------------------------------------------ fitting
    def fit(self, X: Any, y: Any = None, *, sample_weight: Any = None) -> _ComponentRemoval:
        """Fit on the rows of ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : ignored
        sample_weight : array-like of shape (n_samples,) of non-negative int, optional
            Repeat counts (row ``i`` counts as ``sample_weight[i]`` identical rows).

        Returns
        -------
        self

        Raises
        ------
        ValueError
            Fewer than 2 rows, non-finite values, bad parameters, ``n_components`` above the
            number of features.
        """
        self._check_params()
        arr = validate_data(self, X, dtype=[np.float64, np.float32], ensure_min_samples=2)
        return self.fit_statistics(WhiteningStatistics.from_array(arr, sample_weight))

    def fit_statistics(self, statistics: WhiteningStatistics) -> _ComponentRemoval:
        """Fit from precomputed (e.g. merged per-partition) statistics.

        Raises
        ------
        ValueError
            Fewer than 2 rows summarised, bad parameters, ``n_components > n_features``.
        """
        self._check_params()
        if not isinstance(statistics, WhiteningStatistics):
            raise TypeError(
                f"statistics must be WhiteningStatistics, got {type(statistics).__name__}"
            )
        if statistics.n_samples < 2:
            raise ValueError(
                f"need at least 2 rows, the statistics summarise {statistics.n_samples}"
            )
        d = statistics.n_features
        k = int(self.n_components)
        if k > d:
            raise ValueError(f"n_components={k} is invalid; expected at most n_features={d}")
        matrix = statistics.scatter if self._centred else statistics.sum_outer
        values, components = _top_eigenvectors(np.asarray(matrix, dtype=np.float64), k)
        self._set_fitted(statistics, components, values)
        return self

    def _set_fitted(
        self, statistics: WhiteningStatistics, components: np.ndarray, values: np.ndarray
    ) -> None:
        d = statistics.n_features
        self.statistics_ = statistics
        self.mean_ = statistics.mean.copy() if self._centred else np.zeros(d)
        self.components_ = components
        self.singular_values_ = np.sqrt(values)
        self.component_weights_ = self._weights(values)
        self.n_components_ = int(components.shape[0])
        self.n_features_in_ = d
        self.n_samples_seen_ = statistics.n_samples

    # ---------------------------------------------------------------- transform
    def transform(self, X: Any) -> np.ndarray:
        """Remove the fitted components from the rows of ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features_in_)

        Returns
        -------
        ndarray of shape (n_samples, n_features_in_)
            float32 for float32 input (computed in float64), float64 otherwise.

        Raises
        ------
        sklearn.exceptions.NotFittedError
            Before ``fit``.
        ValueError
            Wrong feature count or non-finite values.
        """
        check_is_fitted(self, "components_")
        arr = validate_data(self, X, dtype=[np.float64, np.float32], reset=False)
        Z = np.subtract(arr, self.mean_, dtype=np.float64)
        Z -= ((Z @ self.components_.T) * self.component_weights_) @ self.components_
        return Z.astype(np.float32) if arr.dtype == np.float32 else Z

    @property
    def _n_features_out(self) -> int:
        return int(self.n_features_in_)

    # ------------------------------------------------------------- save / load
    def _params(self) -> dict[str, Any]:
        return {"n_components": int(self.n_components)}

    def save(self, path: Any) -> None:
        """Write the fitted transform to directory ``path`` (no pickle), atomically.

        Files: ``component_removal.json`` (format, version, parameters, counts) and
        ``mean.npy``, ``scatter.npy`` (the fit statistics), ``components.npy``,
        ``singular_values.npy`` (float64). ``path`` may be missing, empty or a saved transform of
        this module, which is replaced as a whole.

        Raises
        ------
        sklearn.exceptions.NotFittedError
            Before ``fit``.
        FileExistsError, ValueError
            As :meth:`sentvec.Whitening.save`; nothing is written.
        """
        check_is_fitted(self, "components_")
        arrays = {
            "mean": self.statistics_.mean,
            "scatter": self.statistics_.scatter,
            "components": self.components_,
            "singular_values": self.singular_values_,
        }
        with atomic_directory(
            path, marker=_CONFIG_FILE, kind=f"a saved {type(self).__name__}"
        ) as root:
            for name, arr in arrays.items():
                atomic_save_npy(root / f"{name}.npy", np.asarray(arr, dtype=np.float64))
            atomic_write_json(
                root / _CONFIG_FILE,
                {
                    "format": self._FORMAT,
                    "version": _VERSION,
                    "params": self._params(),
                    "n_features_in": int(self.n_features_in_),
                    "n_samples_seen": int(self.n_samples_seen_),
                },
            )

    @classmethod
    def load(cls, path: Any) -> _ComponentRemoval:
        """Read a directory written by :meth:`save`.

        Raises
        ------
        FileNotFoundError
            The directory, its config or an array file is missing.
        ValueError
            A corrupt file, another format, or shapes that disagree with the config.
        """
        root = Path(path)
        cfg_path = root / _CONFIG_FILE
        if not cfg_path.is_file():
            raise FileNotFoundError(
                f"no {_CONFIG_FILE} in {str(root)!r}: not a saved {cls.__name__}"
            )
        try:
            cfg = read_json_object(cfg_path)
            if cfg.get("format") != cls._FORMAT:
                raise ValueError(f"format is {cfg.get('format')!r}, expected {cls._FORMAT!r}")
            if type(cfg.get("version")) is not int or cfg["version"] != _VERSION:
                raise ValueError(f"unsupported version {cfg.get('version')!r}")
            d, n = cfg["n_features_in"], cfg["n_samples_seen"]
            if type(d) is not int or d < 1 or type(n) is not int or n < 2:
                raise ValueError(f"n_features_in={d!r}, n_samples_seen={n!r}")
            obj = cls(**cfg["params"])
            obj._check_params()
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(
                f"{str(cfg_path)!r} is not a valid {cls.__name__} config: {exc}"
            ) from exc
        k = int(obj.n_components)
        expected = {"mean": (d,), "scatter": (d, d), "components": (k, d), "singular_values": (k,)}
        arrays = {}
        for name, shape in expected.items():
            arr = load_npy(root / f"{name}.npy")
            if arr.shape != shape or arr.dtype != np.float64 or not np.isfinite(arr).all():
                raise ValueError(
                    f"{str(root / (name + '.npy'))!r} is corrupt: shape {arr.shape}"
                    f" dtype {arr.dtype}, expected {shape} float64, finite"
                )
            arrays[name] = arr
        stats = WhiteningStatistics(n, arrays["mean"], arrays["scatter"])
        obj._set_fitted(stats, arrays["components"], arrays["singular_values"] ** 2)
        return obj


class AllButTheTop(_ComponentRemoval):
    """All-but-the-top post-processing: centre, then remove the top ``D`` principal directions.

    ``x -> x~ - sum_{i<=D} (u_i^T x~) u_i`` with ``x~ = x - mu``, ``mu`` the fit mean and
    ``u_1 .. u_D`` the unit eigenvectors of the centred scatter ``sum (x - mu)(x - mu)^T`` with
    the largest eigenvalues (= PCA components; Mu & Viswanath, "All-but-the-Top: Simple and
    Effective Postprocessing for Word Representations", ICLR 2018, Algorithm 1). The output
    keeps all ``d`` dimensions. Fitted from :class:`WhiteningStatistics`, so chunked,
    ``partial``-merged and Dask statistics give the same fit.

    Parameters
    ----------
    n_components : int, default 1
        ``D``, the number of directions removed (``1 <= D <= d``). The paper's rule of thumb is
        ``D ~ d / 100`` (:func:`default_abtt_components`).

    Attributes
    ----------
    mean_ : ndarray of shape (n_features,), float64
    components_ : ndarray of shape (n_components, n_features), float64
        Unit principal directions (rows), largest variance first, deterministic signs.
    singular_values_ : ndarray of shape (n_components,), float64
        Square roots of the scatter's eigenvalues (singular values of the centred matrix).
    component_weights_ : ndarray of shape (n_components,), float64
        All ones (each direction is removed fully).
    n_components_, n_features_in_, n_samples_seen_ : int
    statistics_ : WhiteningStatistics
    """

    _FORMAT = "sentvec-all-but-the-top"
    postprocessor_type = "all-but-the-top"
    _centred = True

    def __init__(self, n_components: int = 1) -> None:
        self.n_components = n_components

    def _check_params(self) -> None:
        check_positive_int("n_components", self.n_components)


class CommonComponentRemoval(_ComponentRemoval):
    """Removal of the common discourse components of SIF / uSIF (uncentred SVD).

    ``x -> x - sum_{i<=m} lambda_i (u_i^T x) u_i`` where ``u_i`` are the top right singular
    vectors of the **uncentred** fit matrix ``X`` (eigenvectors of ``X^T X``; the authors' code
    runs ``sklearn.decomposition.TruncatedSVD`` on ``X`` itself, randomized; this computes the
    exact decomposition) and

    * ``weighting="full"``: ``lambda_i = 1`` (SIF, Arora, Liang & Ma, ICLR 2017, Algorithm 1:
      ``v_s <- v_s - u u^T v_s`` with ``u`` the first singular vector);
    * ``weighting="singular-value-share"``: ``lambda_i = s_i^2 / sum_{j<=m} s_j^2``, the share of
      the ``m`` removed components' squared singular values (uSIF, Ethayarajh 2018,
      Algorithm 1 and the authors' code: the sum runs over the ``m`` components only).

    Nothing is centred: an all-zero row stays all-zero.

    Parameters
    ----------
    n_components : int, default 1
        ``m``, components removed (SIF: 1; uSIF: 5).
    weighting : {"full", "singular-value-share"}, default "full"

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_features), float64
    singular_values_ : ndarray of shape (n_components,), float64
        Singular values of the (row-weighted) fit matrix.
    component_weights_ : ndarray of shape (n_components,), float64
        The ``lambda_i``.
    mean_ : ndarray of shape (n_features,), float64
        Zeros (nothing is subtracted).
    n_components_, n_features_in_, n_samples_seen_ : int
    statistics_ : WhiteningStatistics
    """

    _FORMAT = "sentvec-common-component-removal"
    postprocessor_type = "common-component-removal"
    _centred = False

    def __init__(self, n_components: int = 1, *, weighting: str = "full") -> None:
        self.n_components = n_components
        self.weighting = weighting

    def _check_params(self) -> None:
        check_positive_int("n_components", self.n_components)
        check_choice("weighting", self.weighting, COMPONENT_WEIGHTINGS)

    def _weights(self, values: np.ndarray) -> np.ndarray:
        if self.weighting == "full":
            return np.ones_like(values)
        total = float(values.sum())
        if not total > 0:
            raise ValueError("the fit vectors are all zero: no component to remove")
        return values / total

    def _params(self) -> dict[str, Any]:
        return {"n_components": int(self.n_components), "weighting": self.weighting}


#: ``postprocessor_type`` -> class with ``load(path)`` (saved in a pipeline's ``pipeline.json``).
POSTPROCESSOR_TYPES: dict[str, Any] = {
    "whitening": Whitening,
    AllButTheTop.postprocessor_type: AllButTheTop,
    CommonComponentRemoval.postprocessor_type: CommonComponentRemoval,
}


def postprocessor_type_of(postprocessor: Any) -> str:
    """The saved-format type of a fitted post-processor (``"whitening"`` for Whitening).

    Raises
    ------
    TypeError
        Not one of :data:`POSTPROCESSOR_TYPES`' classes.
    """
    for name, cls in POSTPROCESSOR_TYPES.items():
        if type(postprocessor) is cls:
            return name
    raise TypeError(
        f"cannot save a post-processor of type {type(postprocessor).__name__}; "
        f"expected one of {[c.__name__ for c in POSTPROCESSOR_TYPES.values()]}"
    )


def load_postprocessor(path: Any, postprocessor_type: str | None = None) -> Any:
    """Load a saved Whitening, AllButTheTop or CommonComponentRemoval directory.

    Parameters
    ----------
    path : path-like
    postprocessor_type : str, optional
        The expected type (a key of :data:`POSTPROCESSOR_TYPES`); detected from the files
        when None.

    Raises
    ------
    FileNotFoundError
        Neither ``whitening.json`` nor ``component_removal.json`` in ``path``.
    ValueError
        Unknown type, or corrupt files.
    """
    root = Path(path)
    if postprocessor_type is None:
        if (root / _WHITENING_FILE).is_file():
            return Whitening.load(root)
        cfg_path = root / _CONFIG_FILE
        if not cfg_path.is_file():
            raise FileNotFoundError(
                f"no {_WHITENING_FILE} or {_CONFIG_FILE} in {str(root)!r}: "
                "not a saved Whitening, AllButTheTop or "
                "CommonComponentRemoval"
            )
        fmt = read_json_object(cfg_path).get("format")
        for kind in (AllButTheTop, CommonComponentRemoval):
            if fmt == kind._FORMAT:
                return kind.load(root)
        raise ValueError(f"{str(cfg_path)!r}: unknown format {fmt!r}")
    cls = POSTPROCESSOR_TYPES.get(postprocessor_type)
    if cls is None:
        raise ValueError(
            f"unknown post-processor type {postprocessor_type!r}; expected one of "
            f"{sorted(POSTPROCESSOR_TYPES)}"
        )
    return cls.load(root)
