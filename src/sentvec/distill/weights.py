"""The weight of each row of a distilled static model: SIF / uSIF from corpus counts
(Arora et al. 2017; Ethayarajh 2018, with the formulas of :mod:`sentvec.encoders.sif`), Zipf
from the rank as Model2Vec, or none.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sentvec._validation import check_choice
from sentvec.distill.corpus import CorpusCounts

__all__ = [
    "zipf_weights",
    "token_weights",
    "WEIGHTINGS",
    "ZIPF_SIF_COEFFICIENT",
    "DEFAULT_ZIPF_A",
    "DEFAULT_SIF_A",
]

#: Token weightings: SIF / uSIF from corpus counts, Zipf from the rank (Model2Vec), none.
WEIGHTINGS = ("zipf", "usif", "sif", "none")
#: Model2Vec's SIF coefficient for its Zipf weights (``model2vec.distill`` default).
ZIPF_SIF_COEFFICIENT = 1e-4
#: sentvec's default ``a`` of the Zipf weights: 3e-4 scored best with the whitening (docs/distill.md)
DEFAULT_ZIPF_A = 3e-4
#: sentvec distill's SIF ``a`` (counts of the whitening sentences), chosen on dev (docs/distill.md)
DEFAULT_SIF_A = 5e-3


def zipf_weights(n: int, a: float = ZIPF_SIF_COEFFICIENT) -> np.ndarray:
    """Model2Vec's weights: SIF's ``a / (a + p)`` with ``p`` from the rank by Zipf's law.

    ``p_i = (1 / (i + 2)) / sum_j 1 / (j + 2)`` for the ``i``-th token in vocabulary order
    (``model2vec.distill.inference.compute_weights``).

    Returns
    -------
    ndarray of shape (n,), float64
    """
    from sentvec.encoders.sif_weights import sif_weights

    inv_rank = 1.0 / np.arange(2, n + 2, dtype=np.float64)
    return sif_weights(inv_rank / inv_rank.sum(), a)


def token_weights(
    weighting: str,
    counts: np.ndarray | None,
    keep: np.ndarray,
    *,
    sif_a: float | None = None,
    usif_n: int | None = None,
) -> tuple[np.ndarray, dict[str, Any]]:
    """The weight of each row and the parameters used.

    Parameters
    ----------
    weighting : {"usif", "sif", "zipf", "none"}
        ``"sif"``: ``a / (a + p)``, ``p`` = corpus count / total (Arora et al. 2017);
        ``"usif"``: ``a / (a/2 + p)`` with ``a`` derived from the counts (Ethayarajh 2018);
        ``"zipf"``: :func:`zipf_weights` over the kept tokens in vocabulary order (Model2Vec).
    counts : ndarray of shape (V,), int, optional
        Corpus counts (needed for sif and usif).
    keep : ndarray of shape (V,), bool
        Rows that are part of the vocabulary (False for ``[unusedN]``: weight 0).
    sif_a, usif_n : optional
        SIF's ``a`` (default 5e-3; 3e-4 for zipf, where Model2Vec uses 1e-4) and uSIF's ``n``
        (default 11).

    Returns
    -------
    weights : ndarray of shape (V,), float64
    params : dict

    Raises
    ------
    ValueError
        Unknown weighting, or sif / usif without counts, or usif on counts where its ``a`` is
        undefined (no token frequent enough: a tiny corpus).
    """
    from sentvec.encoders.sif import USIF_DEFAULT_N
    from sentvec.encoders.sif_weights import sif_weights, usif_parameter, usif_weights

    check_choice("weighting", weighting, WEIGHTINGS)
    V = keep.shape[0]
    w = np.zeros(V, dtype=np.float64)
    if weighting == "none":
        w[keep] = 1.0
        return w, {}
    if weighting == "zipf":
        a = DEFAULT_ZIPF_A if sif_a is None else float(sif_a)
        w[keep] = zipf_weights(int(keep.sum()), a)
        return w, {"a": a}
    if counts is None:
        raise ValueError(f"weighting={weighting!r} needs corpus counts: give a corpus")
    c = np.where(keep, counts, 0)
    p = c / float(c.sum())
    if weighting == "sif":
        a = DEFAULT_SIF_A if sif_a is None else float(sif_a)
        w[keep] = sif_weights(p[keep], a)
        return w, {"a": a}
    n = USIF_DEFAULT_N if usif_n is None else int(usif_n)
    try:
        a = usif_parameter(c, n)
    except ValueError as e:
        raise ValueError(
            f"{e} (weighting='usif'): give a larger corpus, or weighting='sif' (--weighting sif)"
        ) from e
    w[keep] = usif_weights(p[keep], a)
    return w, {"a": a, "n": n}


def _row_counts(stats: CorpusCounts, V: int, plan: Any) -> np.ndarray:
    """Corpus counts of the token rows (teacher vocabulary, then corpus words).

    Without corpus words: the counts of the counted lines. With them, when only the sample was
    counted (the default): the counts of the sample tokenized with the extended vocabulary;
    when more lines were counted: their teacher-token counts, then each word's sample count
    scaled to the lines counted (an approximation: its pieces stay counted too)."""
    if not plan.words:
        return stats.counts[:V]
    n_tok = plan.n_tokens
    if stats.n_sentences == len(stats.sample):
        flat = [s[s < n_tok] for s in plan.sample]  # drop the bigram rows
        return np.bincount(np.concatenate(flat), minlength=n_tok)[:n_tok]
    scale = stats.n_sentences / max(1, len(stats.sample))
    extra = np.asarray([round(c * scale) for _, _, c in plan.words], dtype=np.int64)
    return np.concatenate([stats.counts[:V], extra])
