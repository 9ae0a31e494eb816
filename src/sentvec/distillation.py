"""Distillation of a static embedding model from a transformer (``sentvec distill``).

A static model maps a sentence to the mean of one row per token. Model2Vec (Tulkens & van
Dongen, 2024) builds the rows by passing every vocabulary token alone through the teacher
(``[CLS] token [SEP]``, mean pooled), reduces them by PCA and weights each by SIF's
``a / (a + p)`` with ``p`` guessed from the token's rank (Zipf's law). sentvec keeps the token
rows (layers as :class:`~sentvec.TransformerEncoder` takes them; pooled by default as the
average of Model2Vec's mean and the ``[CLS]`` output, each scaled to unit norm first,
``mean_cls_unit``, chosen on dev) and fits the rest on real corpus sentences:

* WhiteningBERT's whitening (Huang et al. 2021, Eq. 1) with ``k`` = the output dimension,
  fitted on the (unweighted) static sentence vectors of corpus sentences
  (:class:`sentvec.Whitening`). The sentence vector is a *mean* of rows, so the whitening
  ``(x - mu) W`` folds into the rows exactly: ``r_t' = (r_t - mu) W``. Or Model2Vec's PCA;
* then each row times its token's weight: from real corpus counts (the whitening sentences),
  SIF (Arora et al. 2017, ``a`` = 5e-3; default) or uSIF (Ethayarajh 2018: rows scaled to
  unit norm first) with the formulas of :mod:`sentvec.encoders.sif`; Zipf as Model2Vec (``a`` =
  3e-4), or none.
* optionally extra rows from the corpus (:mod:`sentvec.distill_vocabulary`): whole words the
  teacher's vocabulary splits (``vocabulary="corpus:N"``; off by default) and bigrams
  (Sent2Vec's). A sentence vector is ``mean_t w_t (r_t - mu) W``.

The result is written as a Model2Vec directory (``config.json``, ``model.safetensors`` with the
``embeddings`` tensor, ``tokenizer.json``, ``modules.json``, ``README.md``) that Model2Vec's
``StaticModel.from_pretrained`` and sentence-transformers' ``StaticEmbedding.from_model2vec``
load unchanged, plus the distill record ``distill.json``. Measurements: ``docs/distill.md``.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from sentvec._io import atomic_directory, atomic_write_json, atomic_write_text
from sentvec._validation import check_choice, check_positive_int
from sentvec.distill_corpus import (
    DEFAULT_MAX_SENTENCES,
    DEFAULT_WHITENING_SENTENCES,
    CorpusCounts,
    CorpusPassProcess,
    check_whitening_corpus,
    corpus_pass,
    teacher_vocabulary,
)
from sentvec.distill_vocabulary import flatten_sample, parse_vocabulary
from sentvec.encoders.base import PRECISIONS

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

#: Token weightings: SIF / uSIF from corpus counts, Zipf from the rank (Model2Vec), none.
WEIGHTINGS = ("zipf", "usif", "sif", "none")
#: Whitening: fitted on corpus sentences, or none (then PCA reduces the dimension).
WHITEN_MODES = ("corpus", "none")
#: The distill record written next to the model.
DISTILL_RECORD = "distill.json"
#: Model2Vec's SIF coefficient for its Zipf weights (``model2vec.distill`` default).
ZIPF_SIF_COEFFICIENT = 1e-4

DEFAULT_DIM = 256
#: chosen on held-out data (STS-B dev + SICK trial), never on the test sets (docs/distill.md):
#: SIF (a = 5e-3) 74.41 against uSIF's 74.34 with the mean_cls_unit rows (uSIF led with the
#: mean_cls rows, 74.21 against 74.12, SIF with the mean rows)
DEFAULT_WEIGHTING = "sif"
#: sentvec's default ``a`` of the Zipf weights: 3e-4 scored best with the whitening (docs/distill.md)
DEFAULT_ZIPF_A = 3e-4
#: sentvec distill's SIF ``a`` (counts of the whitening sentences), chosen on dev (docs/distill.md)
DEFAULT_SIF_A = 5e-3
DEFAULT_LAYERS: tuple[int, ...] = (-1,)
#: Token-row poolings: the encoders' own (:data:`sentvec.encoders.POOLING_MODES`),
#: "mean_cls", the average of the mean over ``[CLS] t [SEP]`` and the ``[CLS]`` output, and
#: "mean_cls_unit", the same average of the two scaled to unit norm first.
ROW_POOLINGS = ("mean_cls_unit", "mean_cls", "mean", "cls", "max")
#: The row poolings that combine the encoder's "mean" and "cls" poolings of one forward pass.
MEAN_AND_CLS_POOLINGS = ("mean_cls_unit", "mean_cls")
#: "mean_cls" scored 74.18 on dev against 73.86 for Model2Vec's mean (SIF; docs/distill.md);
#: with uSIF, "mean_cls_unit" 74.34 against mean_cls's 74.21 (the same dev sets)
DEFAULT_POOLING = "mean_cls_unit"
#: the teacher's vocabulary only: 2,000 corpus words gain 0.08 dev with the mean_cls rows and
#: uSIF, below the 0.1 their cost needs (docs/distill.md)
DEFAULT_VOCABULARY = "teacher"
DEFAULT_BIGRAMS = 0
#: factor on the bigram rows' SIF weights, chosen on dev (docs/distill.md)
DEFAULT_BIGRAM_WEIGHT = 0.5


def _special_frame(tokenizer: Any) -> tuple[list[int], list[int]]:
    """The ids the tokenizer puts before and after a text (``[CLS]`` / ``[SEP]`` for BERT,
    ``<s>`` / ``</s>`` for RoBERTa), found by encoding one word with and without them."""
    bare = list(tokenizer("a", add_special_tokens=False)["input_ids"])
    full = list(tokenizer("a", add_special_tokens=True)["input_ids"])
    for i in range(len(full) - len(bare) + 1):
        if full[i : i + len(bare)] == bare:
            return full[:i], full[i + len(bare) :]
    raise ValueError("cannot find where the tokenizer puts its special tokens")


def resolve_precision(precision: str, device: Any) -> str:
    """Deprecated alias of :func:`sentvec.encoders.resolve_precision` (its one home now)."""
    from sentvec.encoders.transformer import resolve_precision as resolve

    return resolve(precision, device)


def token_rows(
    encoder: Any,
    token_ids: Sequence[Sequence[int]],
    *,
    batch_size: int = 512,
    precision: str = "auto",
    pooling: str | None = None,
    show_progress_bar: bool | None = None,
) -> np.ndarray:
    """The teacher's vector of each token sequence, passed alone through the model.

    Each entry is framed by the tokenizer's special tokens (``[CLS] ids [SEP]``), run through
    ``encoder.model`` and pooled with the encoder's pooling (or ``pooling``), layers and mean
    mode (:func:`sentvec.encoders.pooling.pool_layers`): Model2Vec's token rows for
    ``pooling="mean"``, ``layers=(-1,)``; WhiteningBERT's L1 + L_last with ``layers=(1, -1)``;
    ``pooling="mean_cls"`` averages the mean and ``[CLS]`` poolings; ``"mean_cls_unit"``
    (``sentvec distill``'s default) averages them after scaling each to unit norm, so both
    contribute equally to each row's direction.

    Parameters
    ----------
    encoder : sentvec.TransformerEncoder
    token_ids : sequence of sequences of int
        One entry per row (a single vocabulary id, or the ids of a word or bigram).
    batch_size : int, default 512
    precision : {"auto", "float32", "bfloat16"}, default "auto"
        The forward pass's matrix products: "bfloat16" runs the model under
        ``torch.autocast`` with bfloat16 (layer norms and softmax stay float32; MiniLM's rows
        within about 0.4 % of float32's, cosine > 0.9999); "auto" picks it where the device
        multiplies bfloat16 in hardware (:func:`sentvec.encoders.bfloat16_is_fast`: a CPU
        with AMX or AVX512-BF16, about 2x faster than float32 there), float32 elsewhere.
    pooling : {"mean_cls_unit", "mean_cls", "mean", "cls", "max"}, optional
        None: the encoder's own pooling. "mean_cls": ``(mean + cls) / 2`` of the same hidden
        states; "mean_cls_unit": ``(mean / ||mean|| + cls / ||cls||) / 2`` (norms in float64;
        a zero vector stays zero). Chosen on STS-B dev + SICK trial (``docs/distill.md``;
        ``bench/distill_sweep.py --ideas5``).
    show_progress_bar : bool, optional
        None: shown on a terminal (``sentvec._progress.progress_bar``).

    Returns
    -------
    ndarray of shape (len(token_ids), hidden_size), float32

    Raises
    ------
    TypeError
        ``encoder`` has no ``model`` / ``tokenizer`` (not a TransformerEncoder).
    ValueError
        An empty entry, an unknown ``precision`` or ``pooling``.
    """
    import sys

    import torch

    from sentvec._progress import progress_bar
    from sentvec.encoders import pool_layers
    from sentvec.encoders.pooling import Pooling

    if getattr(encoder, "model", None) is None or getattr(encoder, "tokenizer", None) is None:
        raise TypeError(f"token_rows needs a TransformerEncoder, got {type(encoder).__name__}")
    batch_size = check_positive_int("batch_size", batch_size)
    from sentvec.encoders.transformer import resolve_precision as resolve

    use_bf16 = resolve(precision, encoder.device) == "bfloat16"
    mode = encoder.pooling if pooling is None else check_choice("pooling", pooling, ROW_POOLINGS)
    poolings: tuple[Pooling, ...] = ("mean", "cls") if mode in MEAN_AND_CLS_POOLINGS else (mode,)
    if any(len(ids) == 0 for ids in token_ids):
        raise ValueError("token_rows: every entry needs at least one token id")
    head, tail = _special_frame(encoder.tokenizer)
    framed = [head + [int(i) for i in ids] + tail for ids in token_ids]
    lengths = np.fromiter((len(f) for f in framed), dtype=np.int64, count=len(framed))
    order = np.argsort(lengths, kind="stable")
    out = np.empty((len(framed), encoder.hidden_size), dtype=np.float32)
    pad = encoder.tokenizer.pad_token_id or 0
    show = sys.stderr.isatty() if show_progress_bar is None else bool(show_progress_bar)
    with (
        progress_bar(total=len(framed), desc="Teacher forward", unit="tok", show=show) as bar,
        torch.inference_mode(),
        torch.autocast(torch.device(encoder.device).type, torch.bfloat16, enabled=use_bf16),
    ):
        for start in range(0, len(order), batch_size):
            batch = order[start : start + batch_size]
            T = int(lengths[batch].max())
            ids = np.full((len(batch), T), pad, dtype=np.int64)
            mask = np.zeros((len(batch), T), dtype=np.int64)
            for r, j in enumerate(batch):
                ids[r, : lengths[j]] = framed[j]
                mask[r, : lengths[j]] = 1
            mask_t = torch.from_numpy(mask).to(encoder.device)
            res = encoder.model(
                input_ids=torch.from_numpy(ids).to(encoder.device),
                attention_mask=mask_t,
                output_hidden_states=True,
                return_dict=True,
            )
            hs = [h.float() for h in res.hidden_states]
            pooled = [
                pool_layers(hs, mask_t, m, encoder.layer_indices, mean_mode=encoder.mean_mode)
                for m in poolings
            ]
            if len(pooled) == 1:
                both = pooled[0]
            elif mode == "mean_cls_unit":
                both = (_unit_rows(pooled[0]) + _unit_rows(pooled[1])) / 2
            else:
                both = (pooled[0] + pooled[1]) / 2
            out[batch] = both.to("cpu", torch.float32).numpy()
            bar.update(len(batch))
    return out


def _unit_rows(x: Any) -> Any:
    """Each row of a torch tensor divided by its Euclidean norm, in float64 (zero rows stay
    zero)."""
    x = x.double()
    n = x.norm(dim=-1, keepdim=True)
    return x / n.clamp_min(float(np.finfo(np.float64).tiny))


def zipf_weights(n: int, a: float = ZIPF_SIF_COEFFICIENT) -> np.ndarray:
    """Model2Vec's weights: SIF's ``a / (a + p)`` with ``p`` from the rank by Zipf's law.

    ``p_i = (1 / (i + 2)) / sum_j 1 / (j + 2)`` for the ``i``-th token in vocabulary order
    (``model2vec.distill.inference.compute_weights``).

    Returns
    -------
    ndarray of shape (n,), float64
    """
    from sentvec.encoders.sif import sif_weights

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
    from sentvec.encoders.sif import (
        USIF_DEFAULT_N,
        sif_weights,
        usif_parameter,
        usif_weights,
    )

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


def _sentence_matrix(sample: Sequence[np.ndarray], V: int) -> Any:
    """Sparse (n, V) float32 matrix whose product with the rows gives each sentence's mean
    row."""
    import scipy.sparse

    ids = [s for s in sample if len(s)]
    flat, indptr = flatten_sample(ids)
    lengths = np.diff(indptr)
    vals = np.repeat(1.0 / np.maximum(lengths, 1), lengths).astype(np.float32)
    return scipy.sparse.csr_matrix((vals, flat, indptr), shape=(len(ids), V))


def whiten_rows(
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
    unweighted static sentence vectors (:func:`whiten_rows`), or Model2Vec's PCA, then each
    row times its token's weight (Model2Vec's order: reduce, then weight). A sentence vector is
    then ``mean_t w_t (r_t - mu) W``.

    Parameters
    ----------
    rows : ndarray of shape (V, d)
        :func:`token_rows` of every vocabulary id (anything for rows not kept).
    keep : ndarray of shape (V,), bool
        Vocabulary rows (False: never produced by the tokenizer; written as zeros).
    dim : int
        ``k``.
    weighting, whiten, sif_a
        As :func:`distill`. uSIF scales each row to unit norm first (Ethayarajh 2018, Alg. 1).
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
        from sentvec.encoders.sif import sif_weights, usif_weights

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
        white, _ = whiten_rows(R, sample, dim)
        emb = (white * weights[:, None]).astype(np.float32)
    else:
        emb = pca_rows(R, dim, fit_rows=keep) if dim < R.shape[1] else R.astype(np.float32)
        emb = (emb * weights[:, None]).astype(np.float32)
    emb[~keep] = 0.0
    return emb, params


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


@dataclass
class DistilledModel:
    """A distilled static model: rows, tokenizer and the record of how they were made.

    Attributes
    ----------
    embeddings : ndarray of shape (V, k), float32
        Row ``i`` is token id ``i``; weights and whitening are folded in.
    tokenizer_json : str
        The ``tokenizers`` JSON (the teacher's, truncation and padding off).
    record : dict
        Teacher, corpus, counts, settings, wall times.
    bigrams : ndarray of shape (n_bigrams, 2), int64, optional
        Token-id pairs of the last ``n_bigrams`` rows (``--bigrams``): the model is then a
        :class:`sentvec.encoders.static_bigrams.BigramStaticEncoder`, saved in its format.
    """

    embeddings: np.ndarray
    tokenizer_json: str
    record: dict[str, Any] = field(default_factory=dict)
    bigrams: np.ndarray | None = None

    def save(self, path: str | os.PathLike[str], *, dtype: str = "float16") -> Path:
        """Write a Model2Vec directory atomically (see the module docstring); with bigram rows,
        a :class:`~sentvec.encoders.static_bigrams.BigramStaticEncoder` directory instead.

        Parameters
        ----------
        path : path-like
            A new or empty directory, or an earlier ``distill`` output (replaced whole).
        dtype : {"float16", "float32"}, default "float16" (as Model2Vec stores)

        Raises
        ------
        FileExistsError, ValueError
            ``path`` holds something else; nothing is written.
        """
        check_choice("dtype", dtype, ("float16", "float32"))
        encoder = self.to_encoder(dtype=dtype)
        with atomic_directory(path, marker=DISTILL_RECORD, kind="a sentvec distill output") as root:
            if self.bigrams is not None:
                encoder.write_into(root)
            else:
                encoder.save(root)  # the Model2Vec files (StaticEncoder: the one writer of them)
            atomic_write_text(root / "README.md", model_card(self.record))
            atomic_write_json(root / DISTILL_RECORD, self.record)
        return Path(path)

    def to_encoder(self, *, dtype: str = "float32") -> Any:
        """The model as a :class:`sentvec.encoders.StaticEncoder` (L2-normalised output, as
        the saved Model2Vec config says), or a ``BigramStaticEncoder`` with bigram rows."""
        from tokenizers import Tokenizer

        from sentvec.encoders import StaticEncoder

        if self.bigrams is not None:
            from sentvec.encoders import BigramStaticEncoder

            return BigramStaticEncoder(
                self.embeddings.astype(dtype),
                Tokenizer.from_str(self.tokenizer_json),
                self.bigrams,
                normalize=True,
                source=f"sentvec distill of {_teacher_name(self.record)}",
            )
        settings = self.record.get("settings", {})
        return StaticEncoder(
            self.embeddings.astype(dtype),
            Tokenizer.from_str(self.tokenizer_json),
            normalize=True,
            source=f"sentvec distill of {self.record.get('teacher', {}).get('model')}",
            config={
                "tokenizer_name": _teacher_name(self.record),
                "apply_pca": int(self.embeddings.shape[1]),
                "sif_coefficient": self.record.get("weights", {}).get("a"),
                "seq_length": 1000000,
                "pooling": "mean",
                "sentvec_distill": {
                    k: settings.get(k) for k in ("pooling", "weighting", "whiten", "layers")
                },
            },
        )


#: What :func:`sentvec.encoders.model_kind` names, in words, for the teacher check of distill.
_KIND_NAMES = {
    "pipeline": "saved pipeline",
    "sent2vec-bin": "Sent2Vec .bin model",
    "sent2vec-dir": "Sent2Vec model directory",
    "bigram-static": "static model with bigram rows",
    "model2vec": "Model2Vec model",
    "sentence-transformers-static": "sentence-transformers StaticEmbedding model",
    "wordllama": "WordLlama model",
}


def _teacher_name(record: dict[str, Any]) -> Any:
    """The teacher as the user named it (``minilm``, a path as given), else its loaded path."""
    teacher = record.get("teacher", {})
    return teacher.get("name") or teacher.get("model")


def model_card(record: dict[str, Any]) -> str:
    """The README.md of a distilled model: what it is, how it loads, the distill record.

    A model with bigram rows is sentvec's own format (``BigramStaticEncoder``), which Model2Vec
    and sentence-transformers cannot read: its card says so. The teacher is named as the user
    gave it (an alias such as ``minilm``), not by a local path.
    """
    teacher_rec = record.get("teacher", {})
    teacher = _teacher_name(record)
    bigrams = bool(record.get("settings", {}).get("bigrams"))
    rows = "\n".join(
        f"| {k} | `{json.dumps(v, default=str)}` |" for k, v in record.items() if k != "teacher"
    )
    if bigrams:
        front = "library_name: sentvec\ntags: [sentvec, static-embeddings]"
        how = (
            "A sentence vector is the mean of its tokens' rows and the rows of the token bigrams "
            "it contains (Sent2Vec's sentence vector; token weights and whitening are folded into "
            "the rows), L2-normalised. This is sentvec's own format: load it with "
            "`sentvec.load_encoder(DIR)` (Model2Vec and sentence-transformers cannot read it).\n\n"
        )
    else:
        front = "library_name: model2vec\ntags: [model2vec, sentvec, static-embeddings]"
        how = (
            "A sentence vector is the mean of its tokens' rows (token weights and whitening are "
            "folded into the rows), L2-normalised. Load it with `sentvec.load_encoder(DIR)`, "
            "`model2vec.StaticModel.from_pretrained(DIR)` or sentence-transformers' "
            "`StaticEmbedding.from_model2vec(DIR)`.\n\n"
        )
    return (
        f"---\n{front}\nbase_model: {teacher}\n---\n\n"
        f"# Static model distilled from {teacher} by `sentvec distill`\n\n"
        + how
        + "## Distill record\n\n| item | value |\n|---|---|\n"
        f"| teacher | `{json.dumps(teacher_rec, default=str)}` |\n{rows}\n"
    )


def rows_beside(
    child: CorpusPassProcess,
    encoder: Any,
    token_ids: np.ndarray,
    *,
    chunk: int = 2048,
    show_progress_bar: bool | None = None,
    **kwargs: Any,
) -> np.ndarray | None:
    """:func:`token_rows` of single tokens while ``child`` runs: in one torch thread while it
    runs and in torch's own number after (checked every ``chunk`` tokens), so that the two
    processes share the 2 cores instead of fighting over them (docs/distill.md, "Wall time").

    Parameters
    ----------
    child : sentvec.distill_corpus.CorpusPassProcess
    encoder : sentvec.TransformerEncoder
    token_ids : ndarray of int
        Teacher token ids, one row each.
    chunk : int, default 2048
    show_progress_bar : bool, optional
        None: shown on a terminal ("Teacher vocabulary").
    **kwargs
        ``batch_size`` and ``precision`` of :func:`token_rows`.

    Returns
    -------
    ndarray of shape (len(token_ids), hidden_size), float32, or None
        None as soon as the child has failed (a bad corpus): the caller runs the corpus pass
        itself, which raises its error, before any more teacher work.
    """
    import sys

    import torch

    from sentvec._progress import progress_bar

    n_threads = torch.get_num_threads()
    out = np.empty((len(token_ids), int(encoder.hidden_size)), dtype=np.float32)
    show = sys.stderr.isatty() if show_progress_bar is None else bool(show_progress_bar)
    try:
        with progress_bar(
            total=len(token_ids), desc="Teacher vocabulary", unit="tok", show=show
        ) as bar:
            for start in range(0, len(token_ids), chunk):
                if child.failed():
                    return None
                torch.set_num_threads(1 if child.running() else n_threads)
                part = token_ids[start : start + chunk]
                out[start : start + len(part)] = token_rows(
                    encoder, [[int(i)] for i in part], show_progress_bar=False, **kwargs
                )
                bar.update(len(part))
    finally:
        torch.set_num_threads(n_threads)
    return out


def distill(
    model: Any = "minilm",
    output: str | os.PathLike[str] | None = None,
    *,
    corpus: str | os.PathLike[str] | None = None,
    dim: int | None = DEFAULT_DIM,
    weighting: str = DEFAULT_WEIGHTING,
    whiten: str = "corpus",
    vocabulary: str = DEFAULT_VOCABULARY,
    bigrams: int = DEFAULT_BIGRAMS,
    bigram_weight: float = DEFAULT_BIGRAM_WEIGHT,
    pooling: str | None = None,
    layers: int | Sequence[int] = DEFAULT_LAYERS,
    max_sentences: int | None = DEFAULT_MAX_SENTENCES,
    whitening_sentences: int = DEFAULT_WHITENING_SENTENCES,
    sif_a: float | None = None,
    batch_size: int = 512,
    device: str | None = None,
    precision: str = "auto",
    dtype: str = "float16",
    show_progress_bar: bool | None = None,
) -> DistilledModel:
    """Distill a static model from a transformer (see the module docstring).

    Parameters
    ----------
    model : str, path-like or sentvec.TransformerEncoder, default "minilm"
        The teacher: an alias, a local model directory or a loaded encoder (its layers are
        then used and ``layers`` ignored; its pooling unless ``pooling`` is given).
    output : path-like, optional
        Write the Model2Vec directory there (checked before any work: it must be writable and
        must not be an input).
    corpus : path-like, optional
        Sentences, one per line (``.xz`` / ``.gz`` / ``.bz2`` read as is), for the counts and
        the whitening; never evaluation text. None: the 10,000-sentence Wikipedia sample the
        package ships (as ``sentvec distill`` without ``--corpus``), where a corpus is needed
        (``weighting`` sif / usif, ``whiten="corpus"``, corpus words or bigrams).
    dim : int or None, default 256
        Output dimension ``k`` (None: the teacher's width).
    weighting : {"sif", "usif", "zipf", "none"}, default "sif"
        SIF (``a / (a + p)``, ``a`` = 5e-3, ``p`` from the counts of the first
        ``max_sentences`` lines) scored best on the dev sets with the default
        ``mean_cls_unit`` rows and with Model2Vec's mean rows; uSIF (rows scaled to unit
        norm, weights ``a / (a/2 + p)`` with ``a`` derived from the counts) with the
        ``mean_cls`` rows (``docs/distill.md``).
    whiten : {"corpus", "none"}, default "corpus"
        "none": Model2Vec's PCA to ``dim`` instead.
    vocabulary : {"teacher", "corpus", "corpus:N"}, default "teacher"
        "corpus:N": a row for each of the ``N`` most frequent words of the whitening sentences
        that the teacher's WordPiece vocabulary splits (:mod:`sentvec.distill_vocabulary`);
        2,000 of them gained 0.08 dev with the other defaults, below the 0.1 their cost needs
        (``docs/distill.md``).
    bigrams : int, default 0
        Rows for the most frequent adjacent token pairs of the whitening sentences; the model is
        then a ``BigramStaticEncoder`` (sentvec's format, not Model2Vec's).
    bigram_weight : float, default 0.5
        Factor on the bigram rows' SIF weights (chosen on dev with 1,000 bigrams).
    pooling : {"mean_cls_unit", "mean_cls", "mean", "cls", "max"}, optional
        Token-row pooling (:func:`token_rows`). None: "mean_cls_unit" (the average of the mean
        over ``[CLS] t [SEP]``, Model2Vec's rows, and the ``[CLS]`` output, each scaled to unit
        norm first; chosen on dev, docs/distill.md) for a teacher loaded here, a loaded
        encoder's own pooling.
    layers
        Hidden states of the token rows (:class:`sentvec.TransformerEncoder`); default the
        last layer.
    max_sentences : int, optional
        Corpus lines counted for sif / usif (default 200,000; None: all).
    whitening_sentences : int, default 200000
        Corpus lines (the first ones) the whitening is fitted on.
    sif_a : float, optional
        SIF's ``a`` for sif (5e-3) or zipf (3e-4; Model2Vec: 1e-4).
    batch_size, device, dtype, show_progress_bar
        Teacher batch size and device; stored dtype; progress display.
    precision : {"auto", "float32", "bfloat16"}, default "auto"
        The teacher forward pass's matrix products (:func:`token_rows`): "auto" is bfloat16
        where the device has it in hardware, float32 elsewhere. The record keeps the one used.

    Returns
    -------
    DistilledModel

    Raises
    ------
    ValueError
        Bad options, an output that is an input, ``dim`` above the width, a
        teacher that is not a transformer (a Sent2Vec, static model or pipeline), or, with
        ``whiten="corpus"``, fewer than ``dim + 1`` non-empty corpus lines or
        ``whitening_sentences`` (:func:`sentvec.distill_corpus.check_whitening_corpus`),
        refused before the teacher is loaded (``dim=None``: before its forward pass).
    FileNotFoundError
        A missing teacher or corpus.
    """
    t_start = time.perf_counter()
    check_choice("weighting", weighting, WEIGHTINGS)
    check_choice("whiten", whiten, WHITEN_MODES)
    check_choice("dtype", dtype, ("float16", "float32"))
    check_choice("precision", precision, PRECISIONS)
    if pooling is not None:
        check_choice("pooling", pooling, ROW_POOLINGS)
    n_words = parse_vocabulary(vocabulary)
    needs_corpus = weighting in ("sif", "usif") or whiten == "corpus" or n_words > 0 or bigrams
    if needs_corpus and corpus is None:  # as `sentvec distill` without --corpus
        from sentvec._data import corpus_sample_path

        corpus = corpus_sample_path()
    if corpus is not None:
        from sentvec._io import check_input_file

        check_input_file(corpus, what="corpus", regular=True)
    if output is not None:
        from sentvec._io import (
            check_output_path,
            check_outputs_not_inputs,
            check_replaceable_directory,
        )

        model_dir = model if isinstance(model, (str, os.PathLike)) else None
        check_outputs_not_inputs(
            {"output": output}, {"corpus": corpus, "model": model_dir}, replaced_dirs=("output",)
        )
        check_output_path(output, what="output", kind="whole-dir")
        check_replaceable_directory(output, marker=DISTILL_RECORD, kind="a sentvec distill output")
    n_bigrams = int(bigrams)
    if n_bigrams < 0:
        raise ValueError(f"bigrams must be >= 0, got {bigrams}")
    whitening_corpus = corpus if whiten == "corpus" else None
    if whitening_corpus is not None and dim is not None:  # before the teacher's load and pass
        check_whitening_corpus(
            whitening_corpus,
            check_positive_int("dim", dim),
            whitening_sentences=whitening_sentences,
        )
    counted = weighting in ("sif", "usif")  # zipf / none need only the whitening sample
    count_kwargs: dict[str, Any] = {
        "max_sentences": max_sentences if counted else whitening_sentences,
        "sample_sentences": whitening_sentences,
        "keep_lines": bool(n_words),
        "show_progress_bar": show_progress_bar,
    }
    plan_kwargs = {"n_words": n_words, "n_bigrams": n_bigrams}
    t0 = time.perf_counter()
    child: CorpusPassProcess | None = None
    try:
        if isinstance(model, (str, os.PathLike)):
            from sentvec.encoders import TransformerEncoder, load_encoder, model_kind

            kind = model_kind(model)
            if kind != "transformer":
                if kind in ("other-file", "sent2vec-dir"):
                    load_encoder(model)  # a file or directory that is no model: its own error
                raise ValueError(
                    f"the teacher {os.fspath(model)!r} is a {_KIND_NAMES.get(kind, kind)}, not "
                    "a transformer: distill needs a transformer (an alias such as 'minilm' or "
                    "a Hugging Face model directory) to pass its vocabulary through"
                )
            if corpus is not None and needs_corpus:
                child = CorpusPassProcess.start(model, corpus, count_kwargs, plan_kwargs)
            row_pooling = DEFAULT_POOLING if pooling is None else pooling
            encoder = TransformerEncoder.from_pretrained(
                model,
                pooling="mean" if row_pooling in MEAN_AND_CLS_POOLINGS else row_pooling,  # type: ignore[arg-type]
                layers=layers,
                device=device,
            )
        else:
            encoder = model
            row_pooling = encoder.pooling if pooling is None else pooling
        d = int(encoder.hidden_size)
        k = d if dim is None else check_positive_int("dim", dim)
        if k > d:
            raise ValueError(f"dim={k} is above the teacher's width {d}")
        if whitening_corpus is not None and dim is None:  # k is the width: before the pass
            check_whitening_corpus(whitening_corpus, k, whitening_sentences=whitening_sentences)
        tok = encoder.tokenizer
        vocabulary_ = teacher_vocabulary(tok)
        tokens, keep, backend, unk_id = vocabulary_
        V = len(tokens)
        times: dict[str, float] = {"teacher_load_s": time.perf_counter() - t0}
        from sentvec.encoders import resolve_precision as resolve

        precision = resolve(precision, encoder.device)
        row_kw: dict[str, Any] = {
            "batch_size": batch_size,
            "precision": precision,
            "pooling": row_pooling,
        }

        stats = None
        passed = None
        early: tuple[np.ndarray, np.ndarray] | None = None  # teacher rows made beside the child
        if child is not None:
            # while the child counts, this process has one core: the scikit-learn import of
            # the whitening (~1.2 s) and the teacher's own tokens in one torch thread
            t0 = time.perf_counter()
            if whiten == "corpus":
                import sentvec.whitening  # noqa: F401
            early_ids = np.flatnonzero(keep)
            early_rows = rows_beside(
                child, encoder, early_ids, show_progress_bar=show_progress_bar, **row_kw
            )
            if early_rows is not None:
                early = early_ids, early_rows
            times["teacher_forward_s"] = time.perf_counter() - t0
            t0 = time.perf_counter()
            passed = child.result(vocabulary_)
            times["corpus_wait_s"] = time.perf_counter() - t0
        if passed is not None:
            stats, plan, child_times = passed
            times.update(child_times)
        else:
            stats, plan, own_times = corpus_pass(
                tok, vocabulary_, corpus if needs_corpus else None, count_kwargs, plan_kwargs
            )
            times.update(own_times)
    finally:
        if child is not None:
            child.close()
    pieces, keep, words, pairs = plan.pieces, plan.keep, plan.words, plan.pairs
    counts = None if stats is None else _row_counts(stats, V, plan)
    if weighting == "usif" and counts is not None:  # uSIF's a is undefined on a tiny corpus:
        n_uni = len(keep) - (0 if plan.bigram_p is None else len(plan.bigram_p))
        token_weights("usif", counts[:n_uni], keep[:n_uni])  # say so before the forward pass

    # rows: teacher tokens, then corpus words (--vocabulary), then bigrams (--bigrams)
    t0 = time.perf_counter()
    rows = np.zeros((len(pieces), d), dtype=np.float32)
    todo = np.flatnonzero(keep)
    if early is not None:
        rows[early[0]] = early[1]
        todo = todo[todo >= V]
    if len(todo):
        rows[todo] = token_rows(
            encoder, [pieces[i] for i in todo], show_progress_bar=show_progress_bar, **row_kw
        )
    times["teacher_forward_s"] = times.get("teacher_forward_s", 0.0) + time.perf_counter() - t0

    t0 = time.perf_counter()
    emb, wparams = fit_rows(
        rows,
        keep,
        dim=k,
        weighting=weighting,
        whiten=whiten,
        counts=counts,
        sample=plan.sample if whiten == "corpus" else None,
        sif_a=sif_a,
        bigram_p=plan.bigram_p,
        bigram_weight=bigram_weight,
    )
    if unk_id is not None and 0 <= unk_id < len(keep):
        # sentvec and Model2Vec drop unknown tokens when they encode, sentence-transformers'
        # StaticEmbedding averages every id it gets: a zero row gives all three one direction
        emb[unk_id] = 0.0
    times["fit_s"] = time.perf_counter() - t0

    from sentvec import __version__

    record: dict[str, Any] = {
        "format": "sentvec-distill",
        "version": 1,
        "sentvec_version": __version__,
        "teacher": {
            **encoder.config_dict(),
            **({"name": os.fspath(model)} if isinstance(model, (str, os.PathLike)) else {}),
        },
        "corpus": None
        if stats is None
        else {
            "path": stats.path,
            "sentences_counted": stats.n_sentences,
            "tokens_counted": stats.n_tokens,
            "whitening_sentences": len(stats.sample),
        },
        "settings": {
            "dim": k,
            "weighting": weighting,
            "whiten": whiten,
            "pooling": row_pooling,
            "layers": list(encoder.layers),
            "vocabulary": vocabulary,
            "bigrams": n_bigrams,
            "bigram_weight": bigram_weight if n_bigrams else None,
            "dtype": dtype,
            "precision": precision,
            "max_sentences": max_sentences,
        },
        "weights": wparams,
        "rows": int(emb.shape[0]),
        "corpus_words": len(words),
        "bigram_rows": len(pairs),
        "corpus_words_first": [w for w, _, _ in words[:5]],
        "rows_dropped": [tokens[i] for i in np.flatnonzero(~keep)][:3] + ["..."]
        if (~keep).any()
        else [],
        "n_rows_dropped": int((~keep).sum()),
        "unknown_token_row": None if unk_id is None else "zero",
        "corpus_pass": None
        if stats is None
        else ("child process" if passed is not None else "in process"),
        "wall_time_s": {**{k_: round(v, 3) for k_, v in times.items()}},
    }
    result = DistilledModel(
        emb,
        json.dumps(plan.tokenizer_json, ensure_ascii=False),
        record,
        bigrams=pairs if len(pairs) else None,
    )
    record["wall_time_s"]["total_s"] = round(time.perf_counter() - t_start, 3)
    if output is not None:
        result.save(output, dtype=dtype)
    return result
