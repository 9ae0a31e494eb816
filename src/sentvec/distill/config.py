"""What ``sentvec distill`` is asked to do: :class:`DistillConfig`, every option of
:func:`sentvec.distill.distill` with its default, checked in one place when it is made.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sentvec._validation import check_choice, check_float_range, check_positive_int
from sentvec.distill.corpus import DEFAULT_MAX_SENTENCES, DEFAULT_WHITENING_SENTENCES
from sentvec.distill.reduction import WHITEN_MODES
from sentvec.distill.rows import ROW_POOLINGS
from sentvec.distill.vocabulary import parse_vocabulary
from sentvec.distill.weights import WEIGHTINGS
from sentvec.encoders.base import PRECISIONS, TRANSFORMER_BACKENDS

__all__ = [
    "DistillConfig",
    "DEFAULT_DIM",
    "DEFAULT_WEIGHTING",
    "DEFAULT_LAYERS",
    "DEFAULT_ROW_POOLING",
    "DEFAULT_VOCABULARY",
    "DEFAULT_BIGRAMS",
    "DEFAULT_BIGRAM_WEIGHT",
    "STORED_DTYPES",
]

DEFAULT_DIM = 256
#: chosen on held-out data (STS-B dev + SICK trial), never on the test sets (docs/distill.md):
#: SIF (a = 5e-3) 74.41 against uSIF's 74.34 with the mean_cls_unit rows (uSIF led with the
#: mean_cls rows, 74.21 against 74.12, SIF with the mean rows)
DEFAULT_WEIGHTING = "sif"
DEFAULT_LAYERS: tuple[int, ...] = (-1,)
#: "mean_cls" scored 74.18 on dev against 73.86 for Model2Vec's mean (SIF; docs/distill.md);
#: with uSIF, "mean_cls_unit" 74.34 against mean_cls's 74.21 (the same dev sets)
DEFAULT_ROW_POOLING = "mean_cls_unit"
#: the teacher's vocabulary only: 2,000 corpus words gain 0.08 dev with the mean_cls rows and
#: uSIF, below the 0.1 their cost needs (docs/distill.md)
DEFAULT_VOCABULARY = "teacher"
DEFAULT_BIGRAMS = 0
#: factor on the bigram rows' SIF weights, chosen on dev (docs/distill.md)
DEFAULT_BIGRAM_WEIGHT = 0.5
#: The dtypes a distilled model's rows are stored in.
STORED_DTYPES = ("float16", "float32")


@dataclass(frozen=True)
class DistillConfig:
    """The options of one distillation (:func:`sentvec.distill.distill`), checked when made.

    Parameters
    ----------
    model : str, path-like or sentvec.TransformerEncoder, default "minilm"
        The teacher: an alias, a local model directory or a loaded encoder (its layers, device
        and backend are then used and ``layers``, ``device`` and ``backend`` ignored; its
        pooling unless ``pooling`` is given).
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
        that the teacher's WordPiece vocabulary splits (:mod:`sentvec.distill.vocabulary`);
        2,000 of them gained 0.08 dev with the other defaults, below the 0.1 their cost needs
        (``docs/distill.md``).
    bigrams : int, default 0
        Rows for the most frequent adjacent token pairs of the whitening sentences; the model is
        then a ``BigramStaticEncoder`` (sentvec's format, not Model2Vec's).
    bigram_weight : float, default 0.5
        Factor (>= 0) on the bigram rows' SIF weights (chosen on dev with 1,000 bigrams).
    pooling : {"mean_cls_unit", "mean_cls", "mean", "cls", "max"}, optional
        Token-row pooling (:func:`sentvec.distill.token_rows`). None: "mean_cls_unit" (the
        average of the mean over ``[CLS] t [SEP]``, Model2Vec's rows, and the ``[CLS]`` output,
        each scaled to unit norm first; chosen on dev, docs/distill.md) for a teacher loaded
        here, a loaded encoder's own pooling.
    layers : int or sequence of int, default (-1,)
        Hidden states of the token rows (:class:`sentvec.TransformerEncoder`).
    max_sentences : int, optional
        Corpus lines counted for sif / usif (default 200,000; None: all).
    whitening_sentences : int, default 200000
        Corpus lines (the first ones) the whitening is fitted on.
    sif_a : float, optional
        SIF's ``a`` in (0, 1] for sif (5e-3) or zipf (3e-4; Model2Vec: 1e-4).
    batch_size : int, default 512
        Token sequences per teacher forward pass.
    device : str, optional
        The teacher's torch device (default: cuda if available).
    backend : {"torch", "onnx"}, default "torch"
        The teacher's forward pass (:class:`sentvec.TransformerEncoder`): ``"onnx"`` runs it
        through ONNX Runtime on the CPU, in float32.
    precision : {"auto", "float32", "bfloat16"}, default "auto"
        The teacher forward pass's matrix products (:func:`sentvec.distill.token_rows`):
        "auto" is bfloat16 where the device has it in hardware, float32 elsewhere and with
        ``backend="onnx"``. The record keeps the one used.
    dtype : {"float16", "float32"}, default "float16"
        The stored rows (as Model2Vec stores them).
    show_progress_bar : bool, optional
        None: shown on a terminal.

    Raises
    ------
    ValueError
        An unknown choice, a bad ``vocabulary``, a ``dim``, ``batch_size``,
        ``max_sentences`` or ``whitening_sentences`` that is not a positive integer, negative
        ``bigrams``, ``bigram_weight`` or ``sif_a`` out of range, ``precision="bfloat16"``
        with ``backend="onnx"``.
    """

    model: Any = "minilm"
    output: str | os.PathLike[str] | None = None
    corpus: str | os.PathLike[str] | None = None
    dim: int | None = DEFAULT_DIM
    weighting: str = DEFAULT_WEIGHTING
    whiten: str = "corpus"
    vocabulary: str = DEFAULT_VOCABULARY
    bigrams: int = DEFAULT_BIGRAMS
    bigram_weight: float = DEFAULT_BIGRAM_WEIGHT
    pooling: str | None = None
    layers: int | Sequence[int] = DEFAULT_LAYERS
    max_sentences: int | None = DEFAULT_MAX_SENTENCES
    whitening_sentences: int = DEFAULT_WHITENING_SENTENCES
    sif_a: float | None = None
    batch_size: int = 512
    device: str | None = None
    backend: str = "torch"
    precision: str = "auto"
    dtype: str = "float16"
    show_progress_bar: bool | None = None

    def __post_init__(self) -> None:
        check_choice("weighting", self.weighting, WEIGHTINGS)
        check_choice("whiten", self.whiten, WHITEN_MODES)
        check_choice("dtype", self.dtype, STORED_DTYPES)
        check_choice("precision", self.precision, PRECISIONS)
        check_choice("backend", self.backend, TRANSFORMER_BACKENDS)
        if self.pooling is not None:
            check_choice("pooling", self.pooling, ROW_POOLINGS)
        parse_vocabulary(self.vocabulary)
        if int(self.bigrams) < 0:
            raise ValueError(f"bigrams must be >= 0, got {self.bigrams}")
        if self.dim is not None:
            check_positive_int("dim", self.dim)
        if self.max_sentences is not None:
            check_positive_int("max_sentences", self.max_sentences)
        check_positive_int("whitening_sentences", self.whitening_sentences)
        check_positive_int("batch_size", self.batch_size)
        check_float_range("bigram_weight", self.bigram_weight, low=0.0)
        if self.sif_a is not None:
            check_float_range("sif_a", self.sif_a, low=0.0, high=1.0, low_inclusive=False)
        if self.backend == "onnx" and self.precision == "bfloat16":
            raise ValueError(
                "precision='bfloat16' needs backend='torch'; the ONNX backend runs float32"
            )

    @property
    def n_words(self) -> int:
        """Corpus words to add (``vocabulary="corpus:N"``), 0 for the teacher's vocabulary."""
        return parse_vocabulary(self.vocabulary)

    @property
    def needs_corpus(self) -> bool:
        """Whether a step reads the corpus (counts, whitening, corpus words or bigrams)."""
        return (
            self.weighting in ("sif", "usif")
            or self.whiten == "corpus"
            or self.n_words > 0
            or int(self.bigrams) > 0
        )

    def corpus_path(self) -> str | os.PathLike[str] | None:
        """The corpus read: the one given, else the packaged sample where one is needed."""
        if self.corpus is None and self.needs_corpus:  # as `sentvec distill` without --corpus
            from sentvec._data import corpus_sample_path

            return corpus_sample_path()
        return self.corpus

    def count_options(self) -> dict[str, Any]:
        """Keyword arguments of :func:`sentvec.distill.corpus.count_corpus_tokens`."""
        counted = self.weighting in ("sif", "usif")  # zipf / none need only the whitening sample
        return {
            "max_sentences": self.max_sentences if counted else self.whitening_sentences,
            "sample_sentences": self.whitening_sentences,
            "keep_lines": bool(self.n_words),
            "show_progress_bar": self.show_progress_bar,
        }

    def plan_options(self) -> dict[str, Any]:
        """Keyword arguments of :func:`sentvec.distill.vocabulary.plan_rows`."""
        return {"n_words": self.n_words, "n_bigrams": int(self.bigrams)}
