"""Post-processing of sentence embeddings: whitening (WhiteningBERT Eq. 1), its mergeable
statistics and solvers, and the other unsupervised fixes fitted from the same statistics
(all-but-the-top, SIF / uSIF common-component removal). This package is the one home of the
post-processors that map fitted vectors to vectors.

* :mod:`~sentvec.whitening.statistics`: :class:`WhiteningStatistics`, mergeable float64
  ``(n, mean, scatter)``, from arrays, chunks or Dask arrays;
* :mod:`~sentvec.whitening.solvers`: ``W`` from the statistics, by eigen-decomposition (Eq. 1)
  or Cholesky, with GIL-free LAPACK calls (``_lapack``);
* :mod:`~sentvec.whitening.estimator`: :class:`Whitening`, the scikit-learn transformer users
  fit, save and load; :func:`check_n_components`, the one validator of a whitening dimension;
* :mod:`~sentvec.whitening.component_removal`: :class:`AllButTheTop` (Mu & Viswanath 2018) and
  :class:`CommonComponentRemoval` (SIF / uSIF), and :func:`load_postprocessor`, which reads any
  saved post-processor directory.
"""

from sentvec.whitening.component_removal import (
    COMPONENT_WEIGHTINGS,
    POSTPROCESSOR_TYPES,
    AllButTheTop,
    CommonComponentRemoval,
    default_abtt_components,
    load_postprocessor,
    postprocessor_type_of,
)
from sentvec.whitening.estimator import (
    Whitening,
    check_n_components,
    whiten_keeping_zero_rows,
    whiten_rows,
)
from sentvec.whitening.solvers import DEFAULT_EPS, MIN_VARIANCE, SOLVERS
from sentvec.whitening.statistics import WhiteningStatistics

__all__ = [
    "Whitening",
    "WhiteningStatistics",
    "check_n_components",
    "whiten_rows",
    "whiten_keeping_zero_rows",
    "DEFAULT_EPS",
    "MIN_VARIANCE",
    "SOLVERS",
    "AllButTheTop",
    "CommonComponentRemoval",
    "COMPONENT_WEIGHTINGS",
    "POSTPROCESSOR_TYPES",
    "load_postprocessor",
    "postprocessor_type_of",
    "default_abtt_components",
]
