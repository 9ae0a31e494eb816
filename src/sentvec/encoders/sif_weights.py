"""The word weights of SIF and uSIF, and the token counts they come from.

* :func:`sif_weights`: SIF's ``a / (a + p(w))`` (Arora et al. 2017, Algorithm 1);
* :func:`usif_parameter` and :func:`usif_weights`: uSIF's derived ``a`` and
  ``a / (a / 2 + p(w))`` (Ethayarajh 2018, Algorithm 1);
* :func:`count_tokens`: token counts of a corpus file under a tokenizer (the ``p(w)`` of a
  transformer's vocabulary).

Re-exported by :mod:`sentvec.encoders.sif`, whose encoders use them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["count_tokens", "usif_parameter", "sif_weights", "usif_weights"]


def count_tokens(
    tokenizer: Any,
    corpus_path: str | os.PathLike[str],
    *,
    vocab_size: int,
    max_lines: int | None = None,
    batch_lines: int = 4096,
) -> tuple[np.ndarray, int]:
    """Token counts of a corpus file, tokenized with a Hugging Face tokenizer.

    Each non-empty line (UTF-8, ``.xz`` / ``.gz`` / ``.bz2`` decompressed) is tokenized without
    special tokens (``add_special_tokens=False``).

    Parameters
    ----------
    tokenizer : transformers tokenizer
    corpus_path : path-like
    vocab_size : int
        Length of the counts array (the embedding matrix's rows).
    max_lines : int, optional
        Read only the first ``max_lines`` lines.
    batch_lines : int, default 4096

    Returns
    -------
    counts : ndarray of shape (vocab_size,), int64
    n_lines : int
        Non-empty lines counted.

    Raises
    ------
    FileNotFoundError
        ``corpus_path`` does not exist.
    ValueError
        The tokenizer returned an id ``>= vocab_size``, or the corpus has no token.
    """
    from sentvec.sent2vec.corpus_files import open_binary

    path = Path(corpus_path)
    if not path.is_file():
        raise FileNotFoundError(f"corpus file not found: {str(path)!r}")
    counts = np.zeros(vocab_size, dtype=np.int64)
    n_lines = 0

    def add(batch: list[str]) -> None:
        ids = tokenizer(
            batch,
            add_special_tokens=False,
            return_attention_mask=False,
            return_token_type_ids=False,
            verbose=False,
        )["input_ids"]
        flat = np.fromiter((i for row in ids for i in row), dtype=np.int64)
        if flat.size and int(flat.max()) >= vocab_size:
            raise ValueError(
                f"the tokenizer gave id {int(flat.max())}, beyond the {vocab_size} embedding rows"
            )
        counts[:] += np.bincount(flat, minlength=vocab_size)

    batch: list[str] = []
    with open_binary(path) as fh:
        for i, raw in enumerate(fh):
            if max_lines is not None and i >= max_lines:
                break
            line = raw.decode("utf-8", "replace").strip()
            if line:
                batch.append(line)
                n_lines += 1
            if len(batch) >= batch_lines:
                add(batch)
                batch = []
    if batch:
        add(batch)
    if not counts.any():
        raise ValueError(f"no token counted in {str(path)!r}")
    return counts, n_lines


def usif_parameter(counts: np.ndarray, n: int) -> float:
    """uSIF's ``a`` from the word counts and the expected sentence length ``n``.

    ``V`` = number of words with a positive count, ``p(w) = count / total``; a word is expected
    to appear in a random walk of ``n`` steps when ``p(w) > 1 - (1 - 1/V)^n``; ``alpha`` is the
    share of such words and ``a = (1 - alpha) / (alpha * V / 2)`` (Ethayarajh 2018, Sec. 4,
    with ``Z = V / 2``, as the authors' code).

    Raises
    ------
    ValueError
        No word is above the threshold (``alpha = 0``: ``a`` undefined), or no positive count.
    """
    counts = np.asarray(counts)
    positive = counts[counts > 0].astype(np.float64)
    if positive.size == 0:
        raise ValueError("no word has a positive count")
    V = float(positive.size)
    p = positive / positive.sum()
    threshold = 1.0 - (1.0 - 1.0 / V) ** int(n)
    alpha = float((p > threshold).sum()) / V
    if alpha == 0.0:
        raise ValueError(
            f"no word has p(w) > {threshold:.3g} (n={n}, V={int(V)}): uSIF's a is "
            "undefined; use a larger n"
        )
    return (1.0 - alpha) / (alpha * 0.5 * V)


def sif_weights(p: np.ndarray, a: float) -> np.ndarray:
    """SIF's word weights ``a / (a + p(w))`` (Arora et al. 2017, Algorithm 1).

    Parameters
    ----------
    p : ndarray of shape (V,), float
        Word probabilities ``count / total`` (0 for a word without a count: weight 1).
    a : float
        SIF's ``a`` (> 0).

    Returns
    -------
    ndarray of shape (V,), float64
    """
    return a / (a + np.asarray(p, dtype=np.float64))


def usif_weights(p: np.ndarray, a: float) -> np.ndarray:
    """uSIF's word weights ``a / (a/2 + p(w))`` (Ethayarajh 2018, Algorithm 1), a word without a
    count taking the smallest positive ``p`` of the table (the authors' ``min_prob``).

    Parameters
    ----------
    p : ndarray of shape (V,), float
        Word probabilities ``count / total``, at least one positive.
    a : float
        uSIF's derived ``a`` (:func:`usif_parameter`).

    Returns
    -------
    ndarray of shape (V,), float64
    """
    p = np.asarray(p, dtype=np.float64)
    p = np.where(p > 0, p, p[p > 0].min())
    return a / (0.5 * a + p)
