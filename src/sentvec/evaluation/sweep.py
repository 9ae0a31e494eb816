"""Whitening dimension sweep: STS average versus the kept dimension k.

BERT-whitening (Su et al., 2021) keeps the first k columns of ``U D^{-1/2}``; this module scores
the STS tasks for each k with whitening fitted per STS year (WhiteningBERT's protocol) and
fitted once on an outside corpus whose sentences never include a test sentence
(:func:`prepare_corpus`). :func:`evaluate_whitening_sweep` runs it for a transformer (its
vectors from the vector cache or one forward pass); ``sentvec whiten-sweep`` writes the result.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

import numpy as np

from sentvec._validation import check_choice, check_positive_int
from sentvec.evaluation.layer_results import _json_float, layer_label
from sentvec.evaluation.layers import _single_threaded_blas

__all__ = [
    "CORPUS_PREPROCESSING",
    "prepare_corpus",
    "SweepPoint",
    "WhiteningSweep",
    "whitening_sweep",
    "evaluate_whitening_sweep",
]


#: How outside-corpus text is prepared: as is, lower-cased, or Moses-tokenized and lower-cased
#: (sacremoses ``MosesTokenizer("en").tokenize(line, escape=False)``, the preprocessing of the
#: SentEval STS files and of ``enwiki-2015-sentences-1M.tok.lower.txt.xz``).
CorpusPreprocessing = Literal["none", "lower", "moses-lower"]
CORPUS_PREPROCESSING: tuple[str, ...] = get_args(CorpusPreprocessing)


def prepare_corpus(
    lines: Sequence[str], preprocessing: str = "moses-lower", *, exclude: Sequence[str] = ()
) -> tuple[list[str], int]:
    """Preprocess outside-corpus sentences and drop any that is an evaluation sentence.

    Parameters
    ----------
    lines : sequence of str
        One sentence per item; blank items are dropped.
    preprocessing : {"none", "lower", "moses-lower"}
    exclude : sequence of str
        Sentences that must not be fitted on (the STS test sentences); compared after
        preprocessing.

    Returns
    -------
    sentences : list of str
    n_excluded : int
        Corpus sentences dropped because they equal an excluded sentence.
    """
    check_choice("preprocessing", preprocessing, CORPUS_PREPROCESSING)
    items = [s.strip() for s in lines if s.strip()]
    if preprocessing == "lower":
        items = [s.lower() for s in items]
    elif preprocessing == "moses-lower":  # compiled; the same tokens as sacremoses
        from sentvec.sent2vec.moses import MosesTokenizer

        items = MosesTokenizer(lowercase=True).tokenize_lines(items)
    banned = set(exclude)
    kept = [s for s in items if s not in banned]
    return kept, len(items) - len(kept)


@dataclass(frozen=True)
class SweepPoint:
    """STS score for one whitening fit and dimension k.

    Attributes
    ----------
    fit : {"none", "year", "corpus"}
        No whitening; fitted per STS year on the test pairs (paper protocol); fitted once on
        the outside corpus and applied to every task.
    k : int
        Requested kept dimensions (the full d for "none").
    average : float
    task_scores : tuple of (str, float)
    n_dropped : int
        Of those k, directions dropped because their variance is numerically zero (a singular
        covariance, e.g. a corpus of fewer than d sentences): the vectors have ``k - n_dropped``
        dimensions. For "year", the largest count over the tasks.
    """

    fit: str
    k: int
    average: float
    task_scores: tuple[tuple[str, float], ...]
    n_dropped: int = 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable dict."""
        return {
            "fit": self.fit,
            "k": self.k,
            "n_dropped": self.n_dropped,
            "average": _json_float(self.average),
            "task_scores": {k: _json_float(v) for k, v in self.task_scores},
        }


@dataclass(frozen=True)
class WhiteningSweep:
    """STS average versus whitening dimension k (BERT-whitening's dimension reduction).

    Attributes
    ----------
    model : str
    layers : tuple of int
        Combined hidden states (the encoder's layer choice, e.g. (1, 6)).
    pooling, text_variant, aggregation : str
    dim : int
        Full dimension d.
    corpus : dict
        Path, preprocessing, sentences read / used / excluded (equal to a test sentence).
    points : tuple of SweepPoint
    timings : dict of str to float
        Seconds: ``sts_vectors``, ``corpus_vectors``, ``scoring``.
    """

    model: str
    layers: tuple[int, ...]
    pooling: str
    text_variant: str
    aggregation: str
    dim: int
    corpus: dict[str, Any]
    points: tuple[SweepPoint, ...]
    timings: dict[str, float]

    def series(self, fit: str) -> tuple[SweepPoint, ...]:
        """Points of one fit, k ascending."""
        return tuple(sorted((p for p in self.points if p.fit == fit), key=lambda p: p.k))

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable dict."""
        return {
            "model": self.model,
            "layers": list(self.layers),
            "pooling": self.pooling,
            "text_variant": self.text_variant,
            "aggregation": self.aggregation,
            "dim": self.dim,
            "corpus": dict(self.corpus),
            "points": [p.to_dict() for p in self.points],
            "timings": dict(self.timings),
        }

    def to_json(self) -> str:
        """Indented JSON text of :meth:`to_dict`."""
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False)

    def to_markdown(self) -> str:
        """Markdown table: one row per k, one column per fit."""
        fits = [f for f in ("year", "corpus") if self.series(f)]
        base = self.series("none")
        c = self.corpus
        lines = [
            f"# Whitening dimension sweep: {self.model}, {layer_label(self.layers)}, "
            f"{self.pooling} pooling",
            "",
            f"- STS text variant `{self.text_variant}`; {self.aggregation} over subsets, "
            "mean of the task scores (Spearman rho x 100).",
            "- `year`: mu and Sigma fitted per STS year on both sides of all its scored "
            "test pairs (the paper's protocol, transductive).",
            f"- `corpus`: fitted once on {c.get('n_used')} sentences of "
            f"`{c.get('path')}` (preprocessing `{c.get('preprocessing')}`; "
            f"{c.get('n_excluded')} sentences equal to a test sentence removed), applied "
            "to every task."
            if c
            else "- no outside corpus.",
            "",
        ]
        if base:
            lines += [f"No whitening: {base[0].average:.2f}.", ""]
        lines += ["| k | " + " | ".join(fits) + " |", "|---:|" + "---:|" * len(fits)]
        ks = sorted({p.k for p in self.points if p.fit != "none"})
        for k in ks:
            row = [
                next(
                    (
                        f"{p.average:.2f}" + (f" ({k - p.n_dropped} kept)" if p.n_dropped else "")
                        for p in self.series(f)
                        if p.k == k
                    ),
                    "-",
                )
                for f in fits
            ]
            lines.append(f"| {k}{' (d)' if k == self.dim else ''} | " + " | ".join(row) + " |")
        if any(p.n_dropped for p in self.points):
            lines += [
                "",
                '"(N kept)": the covariance was singular, so only N of the k '
                "directions had non-zero variance (for `year`, the fewest over the tasks).",
            ]
        t = self.timings
        lines += ["", "Wall times: " + ", ".join(f"{k} {v:.1f} s" for k, v in t.items()), ""]
        return "\n".join(lines)


def whitening_sweep(
    sts_vectors: np.ndarray,
    tasks: Sequence[Any],
    sentences: Sequence[str],
    *,
    ks: Sequence[int | None],
    corpus_vectors: np.ndarray | None = None,
    aggregation: str = "mean",
) -> tuple[SweepPoint, ...]:
    """Score STS with whitening reduced to each k, fitted per year and/or on a corpus.

    Parameters
    ----------
    sts_vectors : ndarray of shape (n, d)
        Vectors of ``sentences`` (all distinct STS sentences).
    tasks : list of STSTask
    sentences : list of str
    ks : sequence of int or None
        Dimensions to keep (``None``: all d); each must be <= d.
    corpus_vectors : ndarray of shape (m, d), optional
        Outside-corpus vectors for the "corpus" fit (skipped when ``None``).
    aggregation : {"mean", "wmean", "all"}

    Returns
    -------
    tuple of SweepPoint
        The "none" baseline, then "year" and "corpus" points per k.

    Raises
    ------
    ValueError
        A k larger than d or not positive.
    """
    from sentvec.evaluation.sts import STSScorer
    from sentvec.whitening import Whitening

    d = int(np.asarray(sts_vectors).shape[1])
    dims = []
    for k in ks:
        k = d if k is None else check_positive_int("k", k)
        if k > d:
            raise ValueError(f"k={k} is invalid; expected at most the dimension d={d}")
        dims.append(k)
    dims = sorted(set(dims))

    def point(fit: str, k: int, res: Any, n_dropped: int = 0) -> SweepPoint:
        if fit == "year":
            n_dropped = max(res.whitening.n_dropped.values(), default=0)
        return SweepPoint(
            fit,
            k,
            float(res.average),
            tuple((str(a), float(b)) for a, b in res.task_scores.items()),
            int(n_dropped),
        )

    scorer = STSScorer(tasks, sentences)
    with _single_threaded_blas():
        out = [point("none", d, scorer.score(sts_vectors, aggregation=aggregation))]
        for k in dims:
            out.append(
                point(
                    "year",
                    k,
                    scorer.score(
                        sts_vectors,
                        whitening="year",
                        n_components=None if k == d else k,
                        aggregation=aggregation,
                    ),
                )
            )
        if corpus_vectors is not None:
            for k in dims:
                w = Whitening(None if k == d else k).fit(corpus_vectors)
                out.append(
                    point(
                        "corpus",
                        k,
                        scorer.score(sts_vectors, whitening=w, aggregation=aggregation),
                        n_dropped=int(w.n_dropped_),
                    )
                )
    return tuple(out)


def evaluate_whitening_sweep(
    encoder: Any,
    ks: Sequence[int | None],
    tasks: Sequence[str] | None = None,
    *,
    corpus: str | os.PathLike[str] | None = None,
    corpus_size: int = 10_000,
    corpus_preprocessing: str = "auto",
    corpus_label: str | None = None,
    aggregation: str = "mean",
    cache: Any = None,
    batch_size: int | None = None,
    show_progress_bar: bool | None = None,
    data_dir: Any = None,
    variant: str | None = None,
    model: str | None = None,
) -> WhiteningSweep:
    """STS against the whitening dimension k for a transformer, fitted per year and on a corpus.

    Parameters
    ----------
    encoder : TransformerEncoder
        Its ``pooling`` and ``layer_indices`` are the configuration swept; its pooled per-layer
        vectors come from ``cache`` or one forward pass (and are cached).
    ks : sequence of int or None
        Dimensions to keep (``None``: all d); each at most d (see :func:`whitening_sweep`).
    tasks : sequence of str, optional
        STS task names (default: all seven).
    corpus : path, optional
        Outside corpus, one sentence per line (UTF-8), its first ``corpus_size`` lines read;
        None: the per-year fit only.
    corpus_size : int
    corpus_preprocessing : {"auto", "none", "lower", "moses-lower"}
        "auto": "moses-lower" for the senteval STS text, "none" for raw (see
        :func:`prepare_corpus`; corpus sentences equal to a test sentence are dropped).
    corpus_label : str, optional
        How the corpus is named in the result (default: its path).
    aggregation : {"mean", "wmean", "all"}
    cache, batch_size, show_progress_bar, data_dir, variant
        As :func:`sentvec.evaluation.evaluate_table1` (``batch_size`` None: the encoder's).
    model : str, optional
        The model's name in the result (default: the encoder's description).

    Returns
    -------
    WhiteningSweep
        Its timings: ``sts_vectors_s``, ``corpus_vectors_s``, ``scoring_s`` and ``total_s``
        (this call).

    Raises
    ------
    FileNotFoundError
        ``corpus`` is missing.
    ValueError
        A k above d or not positive, fewer than 2 usable corpus sentences, a corpus line that is
        not UTF-8.
    """
    from sentvec._validation import check_path_exists
    from sentvec.encoders.base import describe_encoder, text_variant_of
    from sentvec.evaluation.sts_data import load_sts, unique_sentences

    t0 = time.perf_counter()
    path = None if corpus is None else check_path_exists(corpus, what="corpus file")
    size = check_positive_int("corpus_size", corpus_size)
    task_list = load_sts(tasks, data_dir=data_dir, variant=variant or text_variant_of(encoder))
    text_variant = task_list[0].variant
    sentences = unique_sentences(task_list)
    pooling, layers = encoder.pooling, tuple(encoder.layer_indices)
    run = (encoder, cache, batch_size, show_progress_bar)
    sts_vectors, sts_s = _configuration_vectors(*run, sentences, text_variant)
    corpus_vectors, corpus_info, corpus_s = None, {}, 0.0
    if path is not None:
        prep = corpus_preprocessing
        if prep == "auto":
            prep = "moses-lower" if text_variant == "senteval" else "none"
        corpus_info = _read_corpus(path, size, prep, sentences)
        kept = corpus_info.pop("sentences")
        corpus_vectors, corpus_s = _configuration_vectors(*run, kept, f"corpus:{prep}")
        corpus_info["path"] = corpus_label or str(path)
    t1 = time.perf_counter()
    how = aggregation
    points = whitening_sweep(
        sts_vectors, task_list, sentences, ks=ks, corpus_vectors=corpus_vectors, aggregation=how
    )
    t2 = time.perf_counter()
    return WhiteningSweep(
        model=model or str(describe_encoder(encoder).get("model")),
        layers=layers,
        pooling=pooling,
        text_variant=text_variant,
        aggregation=aggregation,
        dim=int(sts_vectors.shape[1]),
        corpus=corpus_info,
        points=points,
        timings=dict(
            sts_vectors_s=sts_s, corpus_vectors_s=corpus_s, scoring_s=t2 - t1, total_s=t2 - t0
        ),
    )


def _configuration_vectors(
    encoder: Any,
    cache: Any,
    batch_size: int | None,
    show_progress_bar: bool | None,
    sentences: list[str],
    text_variant: str,
) -> tuple[np.ndarray, float]:
    """The encoder's vectors of ``sentences`` (its pooling, its layers averaged) from the
    per-layer cache or one forward pass, and the seconds that took."""
    from sentvec.cache import pooled_layer_vectors
    from sentvec.evaluation.layers import combine_layers

    per, _, seconds = pooled_layer_vectors(
        encoder,
        sentences,
        pooling=encoder.pooling,
        text_variant=text_variant,
        cache=cache,
        batch_size=batch_size,
        show_progress_bar=show_progress_bar,
    )
    return combine_layers(per[encoder.pooling], encoder.layer_indices), seconds


def _read_corpus(
    path: os.PathLike[str], size: int, preprocessing: str, exclude: Sequence[str]
) -> dict[str, Any]:
    """The first ``size`` lines of a corpus file prepared: the sentences kept and the counts
    of the sweep's record (``path`` first, filled in by the caller)."""
    from sentvec._text_lines import read_text_lines

    lines = read_text_lines(path, what="corpus", max_lines=size)
    corpus, n_excluded = prepare_corpus(lines, preprocessing, exclude=exclude)
    if len(corpus) < 2:
        raise ValueError(f"the corpus {str(path)!r} has fewer than 2 usable sentences")
    return {
        "path": str(path),
        "preprocessing": preprocessing,
        "n_read": len(lines),
        "n_used": len(corpus),
        "n_excluded": n_excluded,
        "sentences": corpus,
    }
