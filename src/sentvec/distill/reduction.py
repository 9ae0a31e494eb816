"""The reduction of the teacher's token rows to ``dim``: WhiteningBERT's whitening (Huang et al.
2021, Eq. 1) fitted on corpus sentences and folded into the rows, or Model2Vec's PCA of the
rows; then the weights (:mod:`sentvec.distill.weights`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from sentvec._validation import check_choice
from sentvec.distill.vocabulary import flatten_sample
from sentvec.distill.weights import token_weights

__all__ = ["whiten_token_rows", "pca_rows", "fit_rows", "WHITEN_MODES"]

#: Whitening: fitted on corpus sentences, or none (then PCA reduces the dimension).
WHITEN_MODES = ("corpus", "none")


def _sentence_matrix(sample: Sequence[np.ndarray], V: int) -> Any:
    """Sparse (n, V) float32 matrix whose product with the rows gives each sentence's mean
    row."""
    import scipy.sparse

    ids = [s for s in sample if len(s)]
    flat, indptr = flatten_sample(ids)
    lengths = np.diff(indptr)
    vals = np.repeat(1.0 / np.maximum(lengths, 1), lengths).astype(np.float32)
    return scipy.sparse.csr_matrix((vals, flat, indptr), shape=(len(ids), V))


def whiten_token_rows(
    rows: np.ndarray, sample: Sequence[np.ndarray], n_components: int
) -> tuple[np.ndarray, Any]:
    """Fold WhiteningBERT's whitening of the static sentence vectors into the rows.

    The sentence vector of tokens ``t_1..t_n`` is ``x = (1/n) sum_i r_{t_i}``; the whitening
    ``x_hat = (x - mu) W`` (Eq. 1, ``W = U_k D_k^{-1/2}``) is fitted by :class:`sentvec.Whitening`
    on ``x`` of the ``sample`` sentences. Since ``x`` is a mean, ``x_hat`` is the mean of the rows
    ``(r_t - mu) W``, which are returned: a static model with these rows gives whitened vectors.

    Parameters
    ----------
    rows : ndarray of shape (V, d), float
        Weighted token rows.
    sample : sequence of int arrays
        Token ids of corpus sentences (empty ones skipped).
    n_components : int
        ``k``.

    Returns
    -------
    rows : ndarray of shape (V, k), float32
    whitening : sentvec.Whitening (fitted)

    Raises
    ------
    ValueError
        Fewer than 2 non-empty sentences, or ``k`` above ``d``.
    """
    from sentvec.whitening import Whitening

    # float32 sentence vectors (the rows' own precision; half the memory traffic of float64,
    # -3.5 s of 22 s at the defaults): WhiteningStatistics still accumulates in float64
    S = _sentence_matrix(sample, rows.shape[0])
    X = np.asarray(S @ rows.astype(np.float32, copy=False))
    w = Whitening(n_components, warn_singular=False).fit(X)
    if w.n_components_ < n_components:
        raise ValueError(
            f"the {X.shape[0]} corpus sentences span only {w.n_components_} directions of the "
            f"static sentence vectors, fewer than dim={n_components}: give a larger corpus"
        )
    out = (rows.astype(np.float64) - w.mean_) @ w.whitening_matrix_
    return out.astype(np.float32), w


def pca_rows(rows: np.ndarray, n_components: int, fit_rows: np.ndarray | None = None) -> np.ndarray:
    """Model2Vec's PCA of the token rows: centred, projected on the top ``k`` eigenvectors of
    their covariance, each component's sign making its largest-magnitude score positive
    (``model2vec.distill.inference._pca_fit_transform``).

    Parameters
    ----------
    rows : ndarray of shape (V, d)
    n_components : int
    fit_rows : ndarray of bool of shape (V,), optional
        Rows the PCA is fitted on (default all); all rows are transformed.

    Returns
    -------
    ndarray of shape (V, k), float32
    """
    X = rows.astype(np.float64)
    F = X if fit_rows is None else X[fit_rows]
    mean = F.mean(axis=0)
    C = (F - mean).T @ (F - mean) / (len(F) - 1)
    _, vecs = np.linalg.eigh(C)
    comps = vecs[:, ::-1][:, :n_components]
    scores = (X - mean) @ comps
    ref = scores if fit_rows is None else scores[fit_rows]
    signs = np.sign(ref[np.argmax(np.abs(ref), axis=0), np.arange(comps.shape[1])])
    return (scores * signs).astype(np.float32)


def fit_rows(
    rows: np.ndarray,
    keep: np.ndarray,
    *,
    dim: int,
    weighting: str,
    whiten: str,
    counts: np.ndarray | None = None,
    sample: Sequence[np.ndarray] | None = None,
    sif_a: float | None = None,
    bigram_p: np.ndarray | None = None,
    bigram_weight: float = 1.0,
) -> tuple[np.ndarray, dict[str, Any]]:
    """From the teacher's token rows to the static model's rows: the whitening fitted on the
    unweighted static sentence vectors (:func:`whiten_token_rows`), or Model2Vec's PCA, then each
    row times its token's weight (Model2Vec's order: reduce, then weight). A sentence vector is
    then ``mean_t w_t (r_t - mu) W``.

    Parameters
    ----------
    rows : ndarray of shape (V, d)
        :func:`sentvec.distill.token_rows` of every vocabulary id (anything for rows not kept).
    keep : ndarray of shape (V,), bool
        Vocabulary rows (False: never produced by the tokenizer; written as zeros).
    dim : int
        ``k``.
    weighting, whiten, sif_a
        As :class:`sentvec.distill.DistillConfig`. uSIF scales each row to unit norm first (Ethayarajh 2018, Alg. 1).
    counts : ndarray of shape (V,), optional
        Corpus counts (sif, usif).
    sample : sequence of int arrays, optional
        Token ids of corpus sentences (``whiten="corpus"``), with their bigram rows.
    bigram_p : ndarray of shape (n_bigrams,), optional
        Corpus probability of each bigram row (the last ``n_bigrams`` rows): their weight is
        SIF's ``a / (a + p)`` with the ``a`` of the weighting (uSIF: ``a / (a/2 + p)``; none: 1),
        times ``bigram_weight``.
    bigram_weight : float, default 1.0

    Returns
    -------
    rows : ndarray of shape (V, dim), float32
    weight_params : dict
    """
    check_choice("whiten", whiten, WHITEN_MODES)
    R = rows.astype(np.float64)
    if weighting == "usif":
        norms = np.linalg.norm(R, axis=1, keepdims=True)
        R = np.divide(R, norms, out=np.zeros_like(R), where=norms > 0)
    nb = 0 if bigram_p is None else len(bigram_p)
    n_uni = len(keep) - nb
    weights, params = token_weights(
        weighting, None if counts is None else counts[:n_uni], keep[:n_uni], sif_a=sif_a
    )
    if nb:
        from sentvec.encoders.sif_weights import sif_weights, usif_weights

        p = np.asarray(bigram_p, dtype=np.float64)
        wb = np.ones(nb) if weighting == "none" else sif_weights(p, params["a"])
        if weighting == "usif":
            wb = usif_weights(p, params["a"])
        weights = np.concatenate([weights, float(bigram_weight) * wb])
    if whiten == "corpus":
        if sample is None:
            raise ValueError("whiten='corpus' needs corpus sentences (sample)")
        # whitening fitted on the unweighted static sentence vectors, then the weights: scored
        # 69.95 against 69.78 for whitening the weighted vectors (docs/distill.md)
        white, _ = whiten_token_rows(R, sample, dim)
        emb = (white * weights[:, None]).astype(np.float32)
    else:
        emb = pca_rows(R, dim, fit_rows=keep) if dim < R.shape[1] else R.astype(np.float32)
        emb = (emb * weights[:, None]).astype(np.float32)
    emb[~keep] = 0.0
    return emb, params
