"""WhiteningBERT Table 1-style rows for one encoder (``sentvec report``).

CLS / AVG pooling x last layer / L1 / L1+last, each without and with per-year whitening (Huang
et al., 2021, Table 1), all from the pooled per-layer vectors of one forward pass.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from sentvec.evaluation.layers import (
    _single_threaded_blas,
    combine_layers,
    layer_label,
    normalize_combination,
)

__all__ = ["TABLE1_CONFIGS", "Table1Row", "table1_rows"]


#: (token label, pooling, layers) of WhiteningBERT Table 1; -1 is the last layer.
TABLE1_CONFIGS: tuple[tuple[str, str, tuple[int, ...]], ...] = (
    ("CLS", "cls", (-1,)), ("AVG", "mean", (-1,)), ("AVG", "mean", (1,)),
    ("AVG", "mean", (1, -1)))


@dataclass(frozen=True)
class Table1Row:
    """One row of a WhiteningBERT Table 1-style report.

    Attributes
    ----------
    model : str
    token : str
        "CLS", "AVG", or "-" for encoders without token pooling (Sent2Vec).
    layers : str
        "L6", "L1+L6", or "-" for encoders without layers.
    whitening : bool
        Fitted per STS year (the paper's protocol) when True.
    result : STSResult
        Holds all three aggregations (``scores_by_aggregation``).
    """

    model: str
    token: str
    layers: str
    whitening: bool
    result: Any

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable dict."""
        return {"model": self.model, "token": self.token, "layers": self.layers,
                "whitening": self.whitening, "result": self.result.to_dict()}


def table1_rows(model: str, per_layer: Mapping[str, np.ndarray], tasks: Sequence[Any],
                sentences: Sequence[str]) -> tuple[Table1Row, ...]:
    """Table 1 rows (CLS/AVG x last layer / L1 / L1+last, each without and with whitening).

    Parameters
    ----------
    model : str
    per_layer : mapping of pooling to ndarray of shape (n, L + 1, d)
        Needs ``"cls"`` and ``"mean"`` (rows of a missing pooling are skipped).
    tasks, sentences
        As for :func:`sentvec.evaluation.sts.score_sts`.

    Returns
    -------
    tuple of Table1Row
        Table order, each configuration without then with whitening.
    """
    from sentvec.evaluation.sts import STSScorer

    scorer = STSScorer(tasks, sentences)
    rows = []
    with _single_threaded_blas():
        for token, pooling, layers in TABLE1_CONFIGS:
            if pooling not in per_layer:
                continue
            P = per_layer[pooling]
            idx = normalize_combination(layers, P.shape[1])
            emb = combine_layers(P, idx)
            for w in (False, True):
                res = scorer.score(emb, whitening="year" if w else "none")
                rows.append(Table1Row(model, token, layer_label(idx), w, res))
    return tuple(rows)
