"""The WhiteningBERT STS protocol: cosine similarity, Spearman per subset, whitening per year.

:func:`score_sts` (and :class:`STSScorer`, which prepares the index work once for many vector
sets) takes embeddings of :func:`~sentvec.evaluation.sts_data.unique_sentences` and computes
cosine similarity, Spearman and Pearson correlation x 100 per subset, three aggregations per
task and optional whitening (WhiteningBERT Table 1 protocol, see ``docs/whiteningbert.md``);
:func:`evaluate_sts` encodes and scores in one go. The readers are in
:mod:`sentvec.evaluation.sts_data`.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import Any, Literal

import numpy as np

from sentvec._validation import check_choice, check_embeddings
from sentvec.encoders.base import Encoder, YearPostprocessing
from sentvec.evaluation.cosine import (  # cosine_similarity_rows: importable from here too
    _subset_cosines,
    _whiteningbert_zero_rule,
    cosine_similarity_rows,
)
from sentvec.evaluation.results import (
    AGGREGATIONS,
    STSResult,
    WhiteningInfo,
    aggregate_scores,
    describe_postprocessor,
    rank_golds,
)
from sentvec.evaluation.sts_data import STSTask, as_task_list, load_sts, unique_sentences
from sentvec.whitening import Whitening, check_n_components, whiten_rows

__all__ = [
    "WHITENING_MODES",
    "ZERO_VECTOR_RULES",
    "score_sts",
    "STSScorer",
    "evaluate_sts",
    "cosine_similarity_rows",
]

WhiteningMode = Literal["none", "year"]
WHITENING_MODES: tuple[str, ...] = ("none", "year")
#: Cosine of a pair with a zero vector: "senteval" 0 (SentEval, sentvec's default);
#: "whiteningbert" 1.0 for two zero vectors, 0.5 for one (the WhiteningBERT code's
#: ``1 - sklearn.metrics.pairwise.paired_cosine_distances``).
ZERO_VECTOR_RULES: tuple[str, ...] = ("senteval", "whiteningbert")


def _pair_indices(task: STSTask, index: dict[str, int]) -> list[tuple[np.ndarray, np.ndarray]]:
    out = []
    for sub in task.subsets:
        try:
            i1 = np.fromiter((index[s] for s in sub.sent1), dtype=np.intp, count=sub.n_pairs)
            i2 = np.fromiter((index[s] for s in sub.sent2), dtype=np.intp, count=sub.n_pairs)
        except KeyError as exc:
            missing = [s for s in chain(sub.sent1, sub.sent2) if s not in index]
            raise KeyError(
                f"{len(set(missing))} sentence(s) of {task.name}/{sub.name} are not in "
                f"`sentences`, e.g. {exc.args[0]!r:.80}; embed unique_sentences(tasks)"
            ) from None
        out.append((i1, i2))
    return out


@dataclass(frozen=True)
class _TaskPlan:
    """Index work of one task, independent of the vectors (see :class:`STSScorer`).

    ``rows``: the task's distinct embedding rows (sorted); ``counts``: how often each is a side
    of a scored pair (the year fit set keeps duplicates); ``subset_pairs``: per subset, the two
    sides' positions in ``rows``; ``fit_size``: ``2 x`` the task's pair count.
    """

    name: str
    rows: np.ndarray
    counts: np.ndarray
    subset_pairs: tuple[tuple[np.ndarray, np.ndarray], ...]
    fit_size: int

    @classmethod
    def build(cls, task: STSTask, index: dict[str, int]) -> _TaskPlan:
        pairs = _pair_indices(task, index)
        all_rows = np.concatenate([np.concatenate(p) for p in pairs])
        rows, inverse = np.unique(all_rows, return_inverse=True)
        subset_pairs = []
        start = 0
        for i1, _ in pairs:
            n = len(i1)
            subset_pairs.append((inverse[start : start + n], inverse[start + n : start + 2 * n]))
            start += 2 * n
        return cls(
            task.name,
            rows,
            np.bincount(inverse, minlength=len(rows)),
            tuple(subset_pairs),
            int(all_rows.shape[0]),
        )


class STSScorer:
    """Scores embeddings of fixed sentences on fixed STS tasks (the engine of :func:`score_sts`).

    Everything that does not depend on the vectors is prepared once: the row of every pair's
    sentences, each task's distinct rows with their repeat counts (the "year" whitening fit set),
    the gold scores and subset names. :meth:`score` then costs only the vector work, which is
    what the layer search (56 or more scorings of the same sentences) needs. ``score_sts`` is
    ``STSScorer(tasks, sentences).score(embeddings, ...)``, so both give identical numbers.

    Parameters
    ----------
    tasks : STSTask or iterable of STSTask
    sentences : sequence of str, length n
        Row order of the embeddings passed to :meth:`score`; every sentence of ``tasks`` must be
        present (extra sentences are ignored; for duplicates the first occurrence is used).

    Raises
    ------
    KeyError
        A task sentence is missing from ``sentences``.
    TypeError
        ``sentences`` is a single string.
    ValueError
        No tasks, or duplicate task names.
    """

    def __init__(self, tasks: STSTask | Iterable[STSTask], sentences: Sequence[str]) -> None:
        self.tasks = as_task_list(tasks)
        if isinstance(sentences, (str, bytes)):
            raise TypeError(
                "sentences must be a sequence of str (the embeddings' row order, "
                "e.g. unique_sentences(tasks)), not a single string"
            )
        self.sentences = list(sentences)
        index: dict[str, int] = {}
        for i, s in enumerate(self.sentences):
            index.setdefault(s, i)
        self._plans = tuple(_TaskPlan.build(t, index) for t in self.tasks)
        self._used = np.unique(np.concatenate([p.rows for p in self._plans]))
        self._golds = {t.name: [s.gold for s in t.subsets] for t in self.tasks}
        self._gold_ranks = rank_golds(self._golds)
        self._names = {t.name: list(t.subset_names) for t in self.tasks}
        variants = sorted({t.variant for t in self.tasks})
        self._variant: Any = variants[0] if len(variants) == 1 else variants

    @property
    def n_sentences(self) -> int:
        """Rows expected in the embeddings (``len(sentences)``)."""
        return len(self.sentences)

    def score(
        self,
        embeddings: Any,
        *,
        whitening: Any = "none",
        n_components: int | None = None,
        aggregation: str = "mean",
        metadata: Mapping[str, Any] | None = None,
        postprocessor: Any = None,
        zero_vectors: str = "senteval",
    ) -> STSResult:
        """Score embeddings of ``sentences``; parameters, result and warnings as :func:`score_sts`.

        Raises
        ------
        ValueError
            Bad shapes, non-finite embeddings, unknown modes.
        """
        check_choice("aggregation", aggregation, AGGREGATIONS)
        check_choice("zero_vectors", zero_vectors, ZERO_VECTOR_RULES)
        emb = check_embeddings(embeddings, name="embeddings")
        if emb.shape[1] == 0:
            raise ValueError("embeddings have 0 features; cosine similarity needs at least one")
        if emb.shape[0] != self.n_sentences:
            raise ValueError(
                f"embeddings has {emb.shape[0]} rows but sentences has {self.n_sentences}"
            )
        check_n_components(n_components, emb.shape[1])
        if whitening is None:
            whitening = "none"
        fitted = None
        if isinstance(whitening, str):
            check_choice("whitening", whitening, WHITENING_MODES)
            if whitening == "none" and n_components is not None:
                raise ValueError(
                    "n_components applies to whitening; it is invalid with whitening='none'"
                )
        else:
            from sklearn.utils.validation import check_is_fitted

            if not callable(getattr(whitening, "transform", None)):
                raise ValueError(
                    f"whitening={whitening!r} is invalid; expected one of "
                    f"{list(WHITENING_MODES)} or a fitted Whitening"
                )
            check_is_fitted(whitening)
            if n_components is not None:
                raise ValueError("n_components is invalid with an already fitted Whitening")
            if postprocessor is not None:
                raise ValueError(
                    "postprocessor (fitted per task) is invalid with an already fitted whitening"
                )
            fitted = whitening
        if fitted is not None:
            shared = fitted.transform(emb[self._used])
            tally = _ModeTally("fitted", zero_vectors)
            for plan in self._plans:
                Z = shared[np.searchsorted(self._used, plan.rows)]
                tally.add(plan, _subset_cosines(Z, plan.subset_pairs))
                if zero_vectors == "whiteningbert":
                    _whiteningbert_zero_rule(tally.preds[plan.name], Z, plan.subset_pairs)
            # warnings point at the caller: _result, score, caller
            return self._result(tally, aggregation, metadata, fitted=fitted, stacklevel=3)

        # warnings: _result, score_modes, score, caller
        return self.score_modes(
            lambda rows: emb[rows],
            (whitening,),
            n_components=n_components,
            aggregation=aggregation,
            metadata=metadata,
            stacklevel=4,
            postprocessor=postprocessor,
            zero_vectors=zero_vectors,
        )[0]

    def score_modes(
        self,
        rows_of: Callable[[np.ndarray], np.ndarray],
        modes: Sequence[str],
        *,
        n_components: int | None = None,
        aggregation: str = "mean",
        metadata: Mapping[str, Any] | None = None,
        stacklevel: int = 3,
        postprocessor: Any = None,
        zero_vectors: str = "senteval",
    ) -> list[STSResult]:
        """Score one set of vectors under several string modes ("none", "year") at once.

        Parameters
        ----------
        rows_of : callable
            ``rows_of(rows)`` returns the finite float32 or float64 vectors of the sentences at
            ``rows`` (sorted indices into ``sentences``) as a C-ordered (len(rows), d) array;
            each task's rows are fetched once and scored under every mode.
        modes : sequence of {"none", "year"}
        n_components, aggregation, metadata, postprocessor, zero_vectors
            As :func:`score_sts`.

        Returns
        -------
        list of STSResult
            One per mode, in order.
        """
        for w in modes:
            check_choice("whitening", w, WHITENING_MODES)
        check_choice("zero_vectors", zero_vectors, ZERO_VECTOR_RULES)
        if postprocessor is not None:
            _check_year_postprocessor(postprocessor, modes, n_components)
        tallies = [_ModeTally(w, zero_vectors) for w in modes]
        for plan in self._plans:
            X = rows_of(plan.rows)
            for tally in tallies:
                if tally.mode == "year" and postprocessor is not None:
                    # the same fit set, another estimator (all-but-the-top, SIF / uSIF removal)
                    from sklearn.base import clone

                    Z = clone(postprocessor).fit_transform(
                        X.astype(np.float64), sample_weight=plan.counts
                    )
                    tally.fit_sizes[plan.name] = plan.fit_size
                elif tally.mode == "year":
                    # fit set = both sides of all the task's pairs, duplicates kept (repeat
                    # counts); float64 rows, so the whitened rows are float64 too
                    Z, w = whiten_rows(X.astype(np.float64), plan.counts, n_components=n_components)
                    tally.dropped[plan.name] = int(w.n_dropped_)
                    tally.fit_sizes[plan.name] = plan.fit_size
                else:
                    Z = X
                tally.add(plan, _subset_cosines(Z, plan.subset_pairs))
                if zero_vectors == "whiteningbert":
                    _whiteningbert_zero_rule(tally.preds[plan.name], Z, plan.subset_pairs)
        results = []  # a loop, not a comprehension: its own frame would shift stacklevel
        for tally in tallies:
            results.append(
                self._result(
                    tally,
                    aggregation,
                    metadata,
                    n_components=n_components,
                    stacklevel=stacklevel,
                    postprocessor=postprocessor,
                )
            )
        return results

    def _result(
        self,
        tally: _ModeTally,
        aggregation: str,
        metadata: Mapping[str, Any] | None,
        *,
        n_components: int | None = None,
        fitted: Any = None,
        stacklevel: int = 2,
        postprocessor: Any = None,
    ) -> STSResult:
        """Warnings, Spearman aggregation and the :class:`STSResult` of one mode's cosines."""
        dropped = tally.dropped
        if any(dropped.values()):
            shown = ", ".join(f"{t}: {n}" for t, n in dropped.items() if n)
            warnings.warn(
                "score_sts: year whitening met numerically singular covariances and dropped "
                f"{sum(dropped.values())} eigen-direction(s) with eigenvalue <= 1e-10 x the "
                f"largest (per task: {shown}); the whitened vectors have that many fewer "
                "dimensions",
                UserWarning,
                stacklevel=stacklevel,
            )
        if tally.n_zero_pairs:
            rule = (
                "set to 0"
                if tally.zero_vectors == "senteval"
                else "set to 1.0 (two zero vectors) or 0.5 (one), the WhiteningBERT rule"
            )
            warnings.warn(
                f"score_sts: {tally.n_zero_vectors} sentence vector(s) are zero, so the cosine "
                f"of {tally.n_zero_pairs} pair(s) is undefined; those cosines were {rule}",
                UserWarning,
                stacklevel=stacklevel,
            )

        scores = aggregate_scores(
            tally.preds, self._golds, self._names, gold_ranks=self._gold_ranks
        )
        if scores.n_undefined:
            warnings.warn(
                f"score_sts: {scores.n_undefined} correlation(s) are undefined (constant "
                "predictions or gold); they are NaN, and so is any aggregate that includes them",
                UserWarning,
                stacklevel=stacklevel,
            )
        if fitted is not None:
            info = WhiteningInfo(
                mode="fitted",
                n_components=int(getattr(fitted, "n_components_", 0)) or None,
                fit_corpus=f"fitted {type(fitted).__name__} instance",
                fit_size=int(getattr(fitted, "n_samples_seen_", 0)) or None,
            )
        elif tally.mode == "year" and postprocessor is not None:
            info = WhiteningInfo(
                mode="year",
                n_components=getattr(postprocessor, "n_components", None),
                fit_corpus=f"{type(postprocessor).__name__} fitted on each "
                "task's scored pairs (both sides, duplicates kept)",
                fit_size=sum(tally.fit_sizes.values()),
                fit_sizes=dict(tally.fit_sizes),
            )
        elif tally.mode == "year":
            info = WhiteningInfo(
                mode="year",
                n_components=n_components,
                fit_corpus="each task's scored pairs (both sides, duplicates kept)",
                fit_size=sum(tally.fit_sizes.values()),
                fit_sizes=dict(tally.fit_sizes),
                n_dropped=dict(dropped),
            )
        else:
            info = WhiteningInfo(mode="none")
        meta = dict(metadata or {})
        meta["text_variant"] = self._variant  # the text fed
        if tally.zero_vectors != "senteval":
            meta["zero_vectors"] = tally.zero_vectors
        if fitted is not None or postprocessor is not None and tally.mode == "year":
            est = fitted if fitted is not None else postprocessor
            meta["postprocessing"] = {
                **describe_postprocessor(est),
                "fit": "fitted instance" if fitted is not None else "per task (year)",
            }
        return STSResult.from_scores(
            scores,
            aggregation=aggregation,
            whitening=info,
            metadata=meta,
            n_zero_vectors=tally.n_zero_vectors,
            n_zero_cosine_pairs=tally.n_zero_pairs,
        )


def _check_year_postprocessor(
    postprocessor: Any, modes: Sequence[str], n_components: int | None
) -> None:
    """An unfitted estimator to fit per task: needs ``fit_transform`` and a "year" mode."""
    if not callable(getattr(postprocessor, "fit_transform", None)):
        raise ValueError(
            f"postprocessor must be an (unfitted) estimator with fit_transform, got "
            f"{type(postprocessor).__name__}"
        )
    if "year" not in modes:
        raise ValueError("postprocessor is fitted per task: it needs whitening='year'")
    if n_components is not None:
        raise ValueError(
            "n_components is invalid with a postprocessor (set it on the postprocessor)"
        )


class _ModeTally:
    """Cosines and counts of one scoring mode, gathered task by task."""

    def __init__(self, mode: str, zero_vectors: str = "senteval") -> None:
        self.mode = mode
        self.zero_vectors = zero_vectors
        self.preds: dict[str, list[np.ndarray]] = {}
        self.fit_sizes: dict[str, int] = {}
        self.dropped: dict[str, int] = {}
        self.n_zero_vectors = 0
        self.n_zero_pairs = 0

    def add(self, plan: _TaskPlan, cosines: tuple[list[np.ndarray], int, int]) -> None:
        self.preds[plan.name], n_zero, n_undefined = cosines
        self.n_zero_vectors += n_zero
        self.n_zero_pairs += n_undefined


def score_sts(
    tasks: STSTask | Iterable[STSTask],
    sentences: Sequence[str],
    embeddings: Any,
    *,
    whitening: Any = "none",
    n_components: int | None = None,
    aggregation: str = "mean",
    metadata: Mapping[str, Any] | None = None,
    postprocessor: Any = None,
    zero_vectors: str = "senteval",
) -> STSResult:
    """Score precomputed sentence embeddings on STS tasks.

    Parameters
    ----------
    tasks : STSTask or iterable of STSTask
    sentences : sequence of str, length n
        ``embeddings[i]`` is the vector of ``sentences[i]``; every sentence of ``tasks`` must be
        present (extra sentences are ignored; for duplicates the first occurrence is used).
    embeddings : array-like of shape (n, d)
    whitening : {"none", "year"} or fitted Whitening (or AllButTheTop, any fitted transformer)
        "none": raw cosine. "year": WhiteningBERT's protocol: for each task, fit mu and Sigma on
        both sentences of **all** scored pairs of the task (all subsets of a SemEval year,
        duplicates kept; the split's own pairs for STS-B / SICK-R) and score every subset with
        it. A fitted :class:`sentvec.Whitening` is applied to all sentences.
    n_components : int, optional
        Dimensions kept by "year" whitening (BERT-whitening's k); invalid with "none" or a
        fitted instance.
    aggregation : {"mean", "wmean", "all"}
        Which task score :attr:`STSResult.task_scores` holds: unweighted mean over subsets
        (WhiteningBERT, default), mean weighted by pair counts (SentEval), or Spearman over all
        subsets' pairs concatenated (SimCSE). All three are kept in the result.
    metadata : mapping, optional
        Stored in the result (model, pooling, layers, ...); the tasks' text variant is added.
    postprocessor : unfitted scikit-learn transformer, optional
        With ``whitening="year"``: fitted per task on the same fit set as the year whitening
        (``fit_transform(X, sample_weight=repeat counts)``, a clone per task) instead of a
        Whitening, e.g. :class:`sentvec.AllButTheTop` or
        :class:`sentvec.whitening.CommonComponentRemoval`. Recorded in
        ``result.metadata["postprocessing"]`` and ``result.whitening.fit_corpus``.
    zero_vectors : {"senteval", "whiteningbert"}, default "senteval"
        Cosine of a pair with a zero vector (undefined): "senteval" 0, as SentEval's
        ``nan_to_num`` of 0/0; "whiteningbert" 1.0 when both vectors are zero and 0.5 when one
        is, as ``1 - sklearn.metrics.pairwise.paired_cosine_distances`` in the WhiteningBERT
        code (``EmbeddingSimilarityEvaluator``; README, "Evaluation protocols"). Applied to the
        vectors compared, after whitening if any. Only Sent2Vec-like encoders, which give a
        zero vector for a sentence without known words, are affected. A non-default rule is
        recorded in ``result.metadata["zero_vectors"]``.

    Returns
    -------
    STSResult
        Spearman and Pearson correlations x 100.

    Warns
    -----
    UserWarning
        When a zero vector makes a cosine undefined (that pair's cosine is set to 0 and counted),
        a correlation is undefined (constant predictions: NaN, counted), or "year" whitening
        drops numerically-zero directions of a singular covariance (one warning per call; counts
        per task in ``result.whitening.n_dropped``).

    Raises
    ------
    KeyError
        A task sentence is missing from ``sentences``.
    ValueError
        Bad shapes, non-finite embeddings, unknown modes or ``zero_vectors`` rule.
    """
    return STSScorer(tasks, sentences).score(
        embeddings,
        whitening=whitening,
        n_components=n_components,
        aggregation=aggregation,
        metadata=metadata,
        postprocessor=postprocessor,
        zero_vectors=zero_vectors,
    )


def encode_checked(
    encoder: Encoder,
    sentences: list[str],
    batch_size: int | None = None,
    show_progress_bar: bool | None = None,
) -> np.ndarray:
    """``encoder.encode(sentences)`` checked to be one row per sentence.

    Parameters
    ----------
    encoder : Encoder
        Anything with ``encode(sentences, **kw) -> ndarray (n, d)``.
    sentences : list of str
        The texts, ``n`` of them.
    batch_size, show_progress_bar : optional
        Passed on to ``encode`` only when given (not every encoder takes them).

    Returns
    -------
    ndarray, shape (n, d)
        What ``encode`` returned, as an array.

    Raises
    ------
    ValueError
        When the result is not two-dimensional with ``n`` rows.
    """
    kwargs: dict[str, Any] = {"batch_size": batch_size}
    if show_progress_bar is not None:
        kwargs["show_progress_bar"] = show_progress_bar
    out = np.asarray(encoder.encode(sentences, **kwargs))
    if out.ndim != 2 or out.shape[0] != len(sentences):
        raise ValueError(
            f"encoder.encode returned shape {out.shape} for {len(sentences)} sentences; "
            "expected (n, d)"
        )
    return out


def evaluate_sts(
    encoder: Encoder,
    tasks: Any = None,
    *,
    whitening: Any = "none",
    n_components: int | None = None,
    aggregation: str = "mean",
    batch_size: int | None = None,
    show_progress_bar: bool | None = None,
    metadata: Mapping[str, Any] | None = None,
    postprocessor: Any = None,
    zero_vectors: str = "senteval",
    embeddings: np.ndarray | None = None,
) -> STSResult:
    """Encode the tasks' sentences with ``encoder`` and score them (see :func:`score_sts`).

    Parameters
    ----------
    encoder : Encoder
        Anything with ``encode(sentences, **kw) -> ndarray (n, d)``.
    tasks : iterable of STSTask or of task names, optional
        Default: all seven tasks, read with the encoder's preferred text variant
        (``sentvec.encoders.base.text_variant_of``). Names are read the same way.
    whitening : {"none", "year"}, None, fitted Whitening, list of str or ndarray
        As :func:`score_sts` (None means "none"), plus a corpus to fit on: a list of sentences
        (encoded with the same encoder in a second ``encode`` call) or an ndarray (n, d) of
        embeddings. The corpus and its size are recorded in the result.
    n_components : int, optional
        Dimensions kept by the whitening fitted here ("year" or a corpus).
    batch_size, show_progress_bar : optional
        Passed to ``encoder.encode`` when not None.
    metadata : mapping, optional
        Added to the encoder's own description (``describe_encoder``).
    postprocessor : unfitted transformer, optional
        As :func:`score_sts` with ``whitening="year"``; with a corpus ``whitening`` it is
        fitted on the corpus instead of a Whitening (``n_components`` must then be None; the
        corpus is recorded in ``result.whitening``, the method in
        ``result.metadata["postprocessing"]``). An encoder whose
        ``year_postprocessor()`` returns an estimator (a SIF / uSIF encoder with
        ``common_component="year"``) supplies it itself: its components are then removed per
        task, and ``whitening`` must be "none" (or "year").
    zero_vectors : {"senteval", "whiteningbert"}, default "senteval"
        Cosine of a pair with a zero vector, as :func:`score_sts`.
    embeddings : ndarray of shape (n, d), optional
        The encoder's vectors of ``unique_sentences(tasks)``, in that order, already computed
        (e.g. read from :class:`sentvec.cache.VectorCache`, as ``sentvec eval-sts`` does); the
        tasks' sentences are then not encoded (the encoder still describes itself and encodes a
        whitening corpus given as sentences).

    Returns
    -------
    STSResult

    Notes
    -----
    All distinct task sentences are encoded in ONE ``encode`` call (:func:`unique_sentences`).

    Differences from other evaluators (README, "Evaluation protocols"): a pair with a zero vector
    scores cosine 0, as in SentEval (WhiteningBERT's evaluator gives 1.0 for two zero vectors
    and 0.5 for one; ``zero_vectors="whiteningbert"`` applies that rule). Cosines are float64
    sums rounded to 12 decimals, so identical vectors tie at 1.0; SentEval's float32 cosines
    break those ties, which moves its Spearman by up to about 0.08 per subset.
    """
    from sentvec.encoders.base import describe_encoder

    if not isinstance(encoder, Encoder):
        raise TypeError(f"encoder must have an encode method, got {type(encoder).__name__}")
    task_list = _task_list(tasks, encoder)

    def encode(items: list[str]) -> np.ndarray:
        return encode_checked(encoder, items, batch_size, show_progress_bar)

    kind, whitening = _whitening_kind(whitening)
    own = _own_postprocessor(encoder, kind, whitening, postprocessor)
    if own is not None:
        whitening, postprocessor = "year", own
    sentences = unique_sentences(task_list)
    emb = encode(sentences) if embeddings is None else _given_embeddings(embeddings, sentences)
    corpus_info = None
    if kind in ("sentences", "vectors"):
        whitening, corpus_info = _fit_on_corpus(
            kind, whitening, emb.shape[1], encode, postprocessor, n_components
        )
        n_components, postprocessor = None, None
    meta = describe_encoder(encoder)
    meta.update(metadata or {})
    result = score_sts(
        task_list,
        sentences,
        emb,
        whitening=whitening,
        n_components=n_components,
        aggregation=aggregation,
        metadata=meta,
        postprocessor=postprocessor,
        zero_vectors=zero_vectors,
    )
    if corpus_info is not None:
        result = result.replace(whitening=corpus_info)
    return result


def _whitening_kind(whitening: Any) -> tuple[str, Any]:
    """What :func:`evaluate_sts`'s ``whitening`` is: ``(kind, value)``.

    Parameters
    ----------
    whitening : None, str, fitted transformer, list or tuple of str, or ndarray

    Returns
    -------
    kind : {"mode", "fitted", "sentences", "vectors"}
        "mode": a string ("none" for None; :func:`score_sts` checks it is "none" or "year");
        "sentences": a corpus to encode and fit on (a list); "vectors": a corpus of embeddings
        (an ndarray); "fitted": anything else (:func:`score_sts` checks it is a fitted
        transformer).
    value
        ``whitening``, "none" for None, a list for a tuple.
    """
    if whitening is None:
        return "mode", "none"
    if isinstance(whitening, str):
        return "mode", whitening
    if isinstance(whitening, np.ndarray):
        return "vectors", whitening
    if isinstance(whitening, (list, tuple)):
        return "sentences", list(whitening)
    return "fitted", whitening


def _given_embeddings(embeddings: Any, sentences: list[str]) -> np.ndarray:
    """``embeddings`` checked: finite, one row per distinct task sentence."""
    emb = check_embeddings(embeddings, name="embeddings")
    if emb.shape[0] != len(sentences):
        raise ValueError(
            f"embeddings has {emb.shape[0]} rows for {len(sentences)} distinct task sentences"
        )
    return emb


def _own_postprocessor(encoder: Encoder, kind: str, whitening: Any, postprocessor: Any) -> Any:
    """The estimator an encoder removes per task itself (``year_postprocessor()``), or None;
    ValueError when another whitening or postprocessor is asked for as well."""
    own = encoder.year_postprocessor() if isinstance(encoder, YearPostprocessing) else None
    if own is not None:
        if postprocessor is not None or not (kind == "mode" and whitening in ("none", "year")):
            raise ValueError(
                f"{type(encoder).__name__} removes its common components per task "
                "(common_component='year'); it cannot be combined with another "
                "whitening or postprocessor"
            )
    return own


def _task_list(tasks: Any, encoder: Encoder) -> list[STSTask]:
    """:func:`evaluate_sts`'s ``tasks`` as a list of tasks: all seven, or names, read with the
    encoder's text variant; tasks as given."""
    from sentvec.encoders.base import text_variant_of

    if tasks is None:
        return load_sts(variant=text_variant_of(encoder))
    tasks = [tasks] if isinstance(tasks, (str, STSTask)) else list(tasks)
    if all(isinstance(t, str) for t in tasks):
        return load_sts(tasks, variant=text_variant_of(encoder))
    return as_task_list(tasks)


def _fit_on_corpus(
    kind: str,
    corpus: Any,
    width: int,
    encode: Callable[[list[str]], np.ndarray],
    postprocessor: Any,
    n_components: int | None,
) -> tuple[Any, WhiteningInfo]:
    """A Whitening (or a clone of ``postprocessor``) fitted on a corpus of ``kind`` "vectors"
    or "sentences" (encoded by ``encode``), and the record of that fit."""
    if kind == "vectors":
        vectors = check_embeddings(corpus, name="whitening corpus", n_features=width)
        desc = "embeddings array"
    else:
        from sentvec._validation import check_sentences

        items, _ = check_sentences(corpus, name="whitening corpus")
        vectors = encode(items)
        desc = "sentences encoded with the evaluated encoder"
    if postprocessor is not None:
        from sklearn.base import clone

        _check_year_postprocessor(postprocessor, ("year",), n_components)
        fitted = clone(postprocessor).fit(vectors)
        k = getattr(postprocessor, "n_components", None)
        desc = f"{type(postprocessor).__name__} fitted on {desc}"
    else:
        fitted, k = Whitening(n_components).fit(vectors), n_components
    info = WhiteningInfo(
        mode="corpus", n_components=k, fit_corpus=desc, fit_size=int(vectors.shape[0])
    )
    return fitted, info
