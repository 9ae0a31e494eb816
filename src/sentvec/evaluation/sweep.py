"""Whitening dimension sweep: STS average versus the kept dimension k.

BERT-whitening (Su et al., 2021) keeps the first k columns of ``U D^{-1/2}``; this module scores
the STS tasks for each k with whitening fitted per STS year (WhiteningBERT's protocol) and
fitted once on an outside corpus whose sentences never include a test sentence
(:func:`prepare_corpus`). ``sentvec whiten-sweep`` writes the result.
"""

from __future__ import annotations

import json
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
