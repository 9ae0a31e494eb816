"""Deprecated: ``sentvec distill`` lives in the :mod:`sentvec.distill` package.

This module re-exports its public names for one release, with the two renamed ones under
their old names: ``DEFAULT_POOLING`` (now :data:`sentvec.distill.DEFAULT_ROW_POOLING`) and
``whiten_rows`` (now :func:`sentvec.distill.whiten_token_rows`; not
:func:`sentvec.whitening.whiten_rows`).
"""

from __future__ import annotations

from typing import Any

from sentvec.distill.config import (  # noqa: F401 - the names the module had
    DEFAULT_BIGRAM_WEIGHT,
    DEFAULT_BIGRAMS,
    DEFAULT_DIM,
    DEFAULT_LAYERS,
    DEFAULT_ROW_POOLING,
    DEFAULT_VOCABULARY,
    DEFAULT_WEIGHTING,
    DistillConfig,
)
from sentvec.distill.model import DISTILL_RECORD, DistilledModel, model_card  # noqa: F401
from sentvec.distill.reduction import WHITEN_MODES, fit_rows, pca_rows, whiten_token_rows
from sentvec.distill.rows import ROW_POOLINGS, rows_beside, token_rows
from sentvec.distill.run import distill
from sentvec.distill.weights import (  # noqa: F401
    DEFAULT_SIF_A,
    DEFAULT_ZIPF_A,
    WEIGHTINGS,
    ZIPF_SIF_COEFFICIENT,
    token_weights,
    zipf_weights,
)
from sentvec.encoders.base import PRECISIONS
from sentvec.encoders.pooling import MEAN_CLS_POOLINGS

__all__ = [
    "distill",
    "DistilledModel",
    "token_rows",
    "rows_beside",
    "resolve_precision",
    "PRECISIONS",
    "zipf_weights",
    "token_weights",
    "whiten_rows",
    "pca_rows",
    "fit_rows",
    "WEIGHTINGS",
    "ROW_POOLINGS",
    "DEFAULT_POOLING",
    "WHITEN_MODES",
    "DISTILL_RECORD",
    "ZIPF_SIF_COEFFICIENT",
]

#: Deprecated name of :data:`sentvec.distill.DEFAULT_ROW_POOLING`.
DEFAULT_POOLING = DEFAULT_ROW_POOLING
#: Deprecated name of :func:`sentvec.distill.whiten_token_rows`.
whiten_rows = whiten_token_rows
#: Deprecated name of :data:`sentvec.encoders.pooling.MEAN_CLS_POOLINGS`.
MEAN_AND_CLS_POOLINGS = MEAN_CLS_POOLINGS


def resolve_precision(precision: str, device: Any) -> str:
    """Deprecated alias of :func:`sentvec.encoders.resolve_precision` (its one home now)."""
    from sentvec.encoders.transformer import resolve_precision as resolve

    return resolve(precision, device)
