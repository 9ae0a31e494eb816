"""Whitening of sentence embeddings (WhiteningBERT Eq. 1): the estimator, its mergeable
statistics and its solvers.

* :mod:`~sentvec.whitening.statistics`: :class:`WhiteningStatistics`, mergeable float64
  ``(n, mean, scatter)``, from arrays, chunks or Dask arrays;
* :mod:`~sentvec.whitening.solvers`: ``W`` from the statistics, by eigen-decomposition (Eq. 1)
  or Cholesky, with GIL-free LAPACK calls (``_lapack``);
* :mod:`~sentvec.whitening.estimator`: :class:`Whitening`, the scikit-learn transformer users
  fit, save and load; :func:`check_n_components`, the one validator of a whitening dimension.
"""

from sentvec.whitening.estimator import (
    Whitening,
    check_n_components,
    whiten_keeping_zero_rows,
    whiten_rows,
)
from sentvec.whitening.solvers import DEFAULT_EPS, MIN_VARIANCE, SOLVERS
from sentvec.whitening.statistics import WhiteningStatistics

__all__ = ["Whitening", "WhiteningStatistics", "check_n_components", "whiten_rows",
           "whiten_keeping_zero_rows",
           "DEFAULT_EPS", "MIN_VARIANCE", "SOLVERS"]
