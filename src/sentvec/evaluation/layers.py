"""Layer-combination analysis of WhiteningBERT (Figures 1 and 2 of Huang et al., 2021).

All combinations are scored from one forward pass: the encoder's ``encode_layers`` pools every
hidden state of every distinct STS sentence once, giving ``P`` of shape ``(n, L+1, d)``
(index 0 = embedding output, index l = transformer layer l), and a combination of hidden states
``(i, j, ...)`` is the **mean of the pooled per-layer vectors** ``P[:, (i, j, ...)].mean(1)``,
scored with :func:`sentvec.evaluation.sts.score_sts`.

For mean (token=AVG, exact or the authors' ``n + 0.01`` divisor) and CLS pooling, averaging the
pooled vectors equals pooling the averaged token vectors, which is what the authors' code does
(``LayerNPooling``), because both poolings are linear in the token vectors. For max pooling the
two differ; sentvec then computes (and labels) the mean of the per-layer max-pooled vectors,
which is also what ``TransformerEncoder.encode(layers=...)`` returns, so the search and
``sentvec eval-sts`` always agree. The authors sum the two layers in their two-layer script; the
sum and the mean differ by a factor only, which changes neither cosines nor whitened cosines.

Figure 2 ranks, for each number m of combined hidden states, the best combination. As in the
authors' ``evaluation_stsbenchmark_layerN.py`` (``itertools.combinations(range(13), N)``) the
candidates include index 0 (the embedding output) unless asked otherwise. The search is
exhaustive for every m with at most ``exhaustive_limit`` combinations (all 2^7 - 1 = 127 for a
6-layer model) and a beam search above it (the ``beam_width`` best combinations of size m - 1,
each extended by one more hidden state); each :class:`SizeBest` records which was used and how
many of the C(K, m) combinations were scored.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

import numpy as np

from sentvec._numeric import LazyKernel
from sentvec._validation import check_choice, check_positive_int

#: Whitening modes of the layer search: none, or fitted per STS year (the paper's protocol).
LayerWhitening = Literal["none", "year"]
LAYER_WHITENING_MODES: tuple[str, ...] = get_args(LayerWhitening)

#: How a size-m group of combinations was searched.
SearchMethod = Literal["exhaustive", "beam"]
SEARCH_METHODS: tuple[str, ...] = get_args(SearchMethod)

DEFAULT_EXHAUSTIVE_LIMIT = 128
DEFAULT_BEAM_WIDTH = 8

COMBINATION_NOTE = (
    "combination = mean of the pooled per-layer sentence vectors; for mean and CLS pooling this "
    "equals pooling the mean of the layers' token vectors (the authors' LayerNPooling); for max "
    "pooling it does not (sentvec's encode(layers=...) computes the same mean of pooled vectors)"
)


def _json_float(v: float) -> float | None:
    """NaN (an undefined correlation) -> None: standard JSON has no NaN (as STSResult does)."""
    return float(v) if math.isfinite(v) else None


def _from_json_float(v: Any) -> float:
    return math.nan if v is None else float(v)


def layer_label(layers: Sequence[int]) -> str:
    """``(1, 6) -> "L1+L6"``; index 0 is the embedding output ``"L0"``."""
    return "+".join(f"L{i}" for i in layers)


def normalize_combination(layers: Sequence[int] | int, n_hidden_states: int) -> tuple[int, ...]:
    """Validate hidden-state indices and return them as a sorted tuple in ``[0, K)``.

    Negative indices count from the end (-1 = last layer).

    Raises
    ------
    ValueError
        Empty, non-integer, out-of-range or repeated indices (the message names the valid range).
    """
    if isinstance(layers, (int, np.integer)) and not isinstance(layers, bool):
        layers = (int(layers),)
    items = tuple(layers)
    if not items:
        raise ValueError("layers=() is invalid; name at least one hidden state")
    out = []
    for raw in items:
        if isinstance(raw, bool) or not isinstance(raw, (int, np.integer)):
            raise ValueError(f"layers={items!r} is invalid; {raw!r} is not an integer")
        if not -n_hidden_states <= int(raw) < n_hidden_states:
            raise ValueError(f"layer index {raw} is out of range; valid hidden-state indices are "
                             f"{-n_hidden_states}..{n_hidden_states - 1}")
        out.append(int(raw) % n_hidden_states)
    if len(set(out)) != len(out):
        raise ValueError(f"layers={items!r} names a hidden state more than once")
    return tuple(sorted(out))


def _rank_key(score: "CombinationScore") -> tuple[float, tuple[int, ...]]:
    """Sort key: best average first (NaN, an undefined score, last), then smallest layers."""
    return (-score.average if math.isfinite(score.average) else math.inf, score.layers)


def _whitening_modes(whitening: str | Sequence[str]) -> tuple[str, ...]:
    """One mode or a sequence of them -> validated, de-duplicated tuple (order kept)."""
    modes = (whitening,) if isinstance(whitening, str) else tuple(dict.fromkeys(whitening))
    if not modes:
        raise ValueError(f"whitening=() is invalid; name at least one of "
                         f"{list(LAYER_WHITENING_MODES)}")
    for w in modes:
        check_choice("whitening", w, LAYER_WHITENING_MODES)
    return modes


def _single_threaded_blas() -> Any:
    """Context limiting BLAS to one thread (see ``CombinationScorer`` for the measurement)."""
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1, user_api="blas")


def _check_per_layer(per_layer: Any) -> np.ndarray:
    P = np.asarray(per_layer)
    if P.ndim != 3:
        raise ValueError(f"per_layer must have shape (n_sentences, n_hidden_states, dim), "
                         f"got {P.shape}")
    if P.shape[1] == 0 or P.shape[2] == 0:
        raise ValueError(f"per_layer of shape {P.shape} has no hidden states or no features")
    if P.dtype.kind == "f" and not P.dtype.isnative:  # e.g. big-endian data read from disk
        P = P.astype(P.dtype.newbyteorder("="))
    if P.dtype == np.float16:  # exactly representable in float32 (as analyze_layers does)
        return P.astype(np.float32)
    if P.dtype not in (np.float32, np.float64):
        raise TypeError(f"per_layer must be float16, float32 or float64, got {P.dtype}")
    return P


def combine_layers(per_layer: np.ndarray, layers: Sequence[int] | int) -> np.ndarray:
    """Mean of the pooled vectors of the chosen hidden states.

    Parameters
    ----------
    per_layer : ndarray of shape (n_sentences, L + 1, d), float32
        Pooled vectors of every hidden state (``TransformerEncoder.encode_layers``).
    layers : int or sequence of int
        Hidden-state indices (0 = embedding output, -1 = last layer).

    Returns
    -------
    ndarray of shape (n_sentences, d), same dtype as ``per_layer``
        ``per_layer[:, layers].mean(axis=1)`` computed in the input precision (a single layer is
        returned as a copy of that layer).
    """
    P = _check_per_layer(per_layer)
    idx = normalize_combination(layers, P.shape[1])
    # sum in index order, then one division: bit-identical to P[:, idx].mean(axis=1) (tested)
    # without the fancy-index copy of the strided layers
    out = np.array(P[:, idx[0], :])
    for i in idx[1:]:
        np.add(out, P[:, i, :], out=out)
    if len(idx) > 1:
        out /= P.dtype.type(len(idx))
    return out


def _combine_rows_impl(P, layers, rows, divisor, out):  # pragma: no cover - compiled by numba
    m = layers.shape[0]
    for i in range(rows.shape[0]):
        src = P[rows[i]]  # (L + 1, d) view of one sentence
        o = out[i]
        a = src[layers[0]]
        if m == 2:  # the layer search's pairs: one pass
            b = src[layers[1]]
            for k in range(o.shape[0]):
                o[k] = (a[k] + b[k]) / divisor
            continue
        for k in range(o.shape[0]):
            o[k] = a[k]
        for j in range(1, m):
            b = src[layers[j]]
            for k in range(o.shape[0]):
                o[k] += b[k]
        if m > 1:
            for k in range(o.shape[0]):
                o[k] /= divisor


_COMBINE_ROWS = LazyKernel(_combine_rows_impl)


def _load_kernels() -> None:
    """Load (or compile) the combination and cosine kernels for float32 and float64.

    Errors are left to the real call. Also run in the main thread before scoring threads
    start: numba's compiler uses ``warnings.catch_warnings``, which is not thread-safe.
    """
    from sentvec.evaluation.sts import _warm_up_scoring

    try:
        one = np.zeros(1, dtype=np.intp)
        for dt in (np.float32, np.float64):
            _combine_rows(np.zeros((1, 1, 1), dtype=dt), (0,), one, np.empty((1, 1), dt))
    except Exception:  # pragma: no cover - reported by the real call
        pass
    _warm_up_scoring()  # the cosine kernel (both dtypes) and the LAPACK entry points


def start_combination_warm_up() -> None:
    """Load the compiled combination and cosine kernels (:func:`_load_kernels`: numba import and
    the first kernel, about 0.75 s) in a background thread, so that it overlaps with a forward
    pass instead of delaying the first scoring. Never raises."""
    if not _COMBINE_ROWS.loaded:
        threading.Thread(target=_load_kernels, name="sentvec-combine-warm-up",
                         daemon=True).start()


def _combine_rows(P: np.ndarray, idx: tuple[int, ...], rows: np.ndarray,
                  out: np.ndarray) -> np.ndarray:
    """``combine_layers(P, idx)[rows]`` written into ``out``, without the full combined array.

    A compiled loop (numba, GIL released) doing the same element-wise arithmetic in the input
    precision as :func:`combine_layers` (sum in index order, then one division by the count),
    so the values are bit-identical (tested). ``P``: C-ordered (n, L + 1, d) float32 or
    float64; ``rows``: valid row indices; ``out``: C-ordered (len(rows), d) of P's dtype.
    """
    if rows.shape[0]:
        _COMBINE_ROWS(P, np.asarray(idx, dtype=np.intp), np.ascontiguousarray(rows, np.intp),
                      P.dtype.type(len(idx)), out)
    return out


@dataclass(frozen=True)
class CombinationScore:
    """STS score of one combination of hidden states.

    Attributes
    ----------
    layers : tuple of int
        Sorted hidden-state indices (0 = embedding output).
    whitening : {"none", "year"}
    average : float
        Mean of the task scores (Spearman rho x 100), the y value of Figures 1 and 2.
    task_scores : tuple of (str, float)
        Per-task scores in task order.
    """

    layers: tuple[int, ...]
    whitening: str
    average: float
    task_scores: tuple[tuple[str, float], ...]

    @property
    def label(self) -> str:
        """``"L1+L6"``."""
        return layer_label(self.layers)

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable dict."""
        return {"layers": list(self.layers), "label": self.label, "whitening": self.whitening,
                "average": _json_float(self.average),
                "task_scores": {k: _json_float(v) for k, v in self.task_scores}}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "CombinationScore":
        """Inverse of :meth:`to_dict`."""
        return cls(tuple(int(i) for i in d["layers"]), str(d["whitening"]),
                   _from_json_float(d["average"]),
                   tuple((str(k), _from_json_float(v)) for k, v in dict(d["task_scores"]).items()))


class CombinationScorer:
    """Scores layer combinations of fixed per-layer vectors, memoising each result.

    Parameters
    ----------
    per_layer : ndarray of shape (n_sentences, L + 1, d)
        Pooled per-layer vectors of ``sentences``.
    tasks : list of STSTask
        Tasks to score (from :func:`sentvec.evaluation.sts.load_sts`).
    sentences : list of str
        Row order of ``per_layer`` (normally ``unique_sentences(tasks)``).
    aggregation : str
        Passed to ``score_sts`` (``"mean"``: the paper's unweighted mean over subsets).
    n_components : int, optional
        Whitening dimension k (``None``: keep all d).
    n_jobs : int, optional
        Combinations scored concurrently by :meth:`score_many` (threads, each with
        single-threaded BLAS via threadpoolctl). Default: the number of usable CPUs. Scoring
        is mostly small BLAS/LAPACK calls (d x d scatter and Cholesky per task and
        combination); one multi-threaded BLAS call at a time was 5-8x slower on a shared
        2-core machine (threads waiting for each other), so parallelism is across combinations.
        Every heavy step releases the GIL (numpy BLAS, LAPACK through :mod:`sentvec._lapack`,
        the compiled cosine kernel), so two threads give about 1.8x on 2 cores.
    """

    def __init__(self, per_layer: np.ndarray, tasks: Sequence[Any], sentences: Sequence[str], *,
                 aggregation: str = "mean", n_components: int | None = None,
                 n_jobs: int | None = None) -> None:
        self.per_layer = _check_per_layer(per_layer)
        if self.per_layer.shape[0] != len(sentences):
            raise ValueError(f"per_layer has {self.per_layer.shape[0]} rows but "
                             f"{len(sentences)} sentences were given")
        from sentvec.evaluation.sts import STSScorer

        # pair rows, fit-set counts and golds prepared once for every combination
        self._sts = STSScorer(tasks, sentences)
        self.aggregation = aggregation
        self.n_components = n_components
        self.n_hidden_states = int(self.per_layer.shape[1])
        # finite and small enough that no sum of L + 1 of them overflows: combinations are then
        # gathered task by task straight from per_layer (no validation of each combined array)
        P = self.per_layer
        # min and max are NaN or infinite if any value is (two passes, no temporary array)
        lo, hi = (float(P.min()), float(P.max())) if P.size else (0.0, 0.0)
        self._direct = bool(P.size and P.flags.c_contiguous
                            and math.isfinite(lo) and math.isfinite(hi)
                            and max(-lo, hi) <= np.finfo(P.dtype).max / P.shape[1])
        if self._direct:
            _load_kernels()  # here, before any scoring thread (see _load_kernels)
        self._memo: dict[tuple[tuple[int, ...], str], CombinationScore] = {}
        self.n_scored = 0
        self.seconds = 0.0
        if n_jobs is None:
            n_jobs = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (
                os.cpu_count() or 1)
        self.n_jobs = check_positive_int("n_jobs", n_jobs)

    @property
    def tasks(self) -> list[Any]:
        """The scored STS tasks."""
        return self._sts.tasks

    @property
    def sentences(self) -> list[str]:
        """Row order of ``per_layer``."""
        return self._sts.sentences

    def result(self, layers: Sequence[int] | int, whitening: str = "none") -> Any:
        """Return the full ``STSResult`` of one combination (not memoised)."""
        check_choice("whitening", whitening, LAYER_WHITENING_MODES)
        idx = normalize_combination(layers, self.n_hidden_states)
        return self._results(idx, (whitening,))[0]

    def _results(self, idx: tuple[int, ...], modes: tuple[str, ...]) -> list[Any]:
        """``STSResult`` of combination ``idx`` under each mode (the same numbers as
        ``score_sts`` of ``combine_layers(per_layer, idx)``)."""
        if self._direct:
            # each task's combined rows are built once, straight into a work buffer, and
            # scored under every mode
            P = self.per_layer
            return self._sts._score_modes(
                lambda rows, out: _combine_rows(P, idx, rows, out), P.dtype, P.shape[2], modes,
                n_components=self.n_components, aggregation=self.aggregation, metadata=None)
        emb = combine_layers(self.per_layer, idx)
        if not np.isfinite(emb).all():
            bad = [f"L{i}" for i in idx if not np.isfinite(self.per_layer[:, i, :]).all()]
            raise ValueError(
                f"the combination {layer_label(idx)} has {int((~np.isfinite(emb)).sum())} "
                "non-finite values: "
                + (f"per_layer holds NaN or inf in {', '.join(bad)}" if bad else
                   "the finite per-layer values are too large and their sum overflows "
                   f"{emb.dtype}"))
        return [self._sts.score(emb, whitening=w,
                                n_components=self.n_components if w == "year" else None,
                                aggregation=self.aggregation) for w in modes]

    def _compute(self, idx: tuple[int, ...], modes: tuple[str, ...]) -> list[CombinationScore]:
        return [CombinationScore(idx, w, float(res.average),
                                 tuple((str(k), float(v)) for k, v in res.task_scores.items()))
                for w, res in zip(modes, self._results(idx, modes))]

    def score(self, layers: Sequence[int] | int, whitening: str = "none") -> CombinationScore:
        """Return the (memoised) :class:`CombinationScore` of one combination."""
        return self.score_many([layers], whitening)[0]

    def score_many(self, combinations: Sequence[Sequence[int] | int],
                   whitening: str | Sequence[str] = "none") -> list[CombinationScore]:
        """Score several combinations (memoised; new ones concurrently, see ``n_jobs``).

        Parameters
        ----------
        combinations : sequence of int or sequence of int
        whitening : {"none", "year"} or sequence of them
            With several modes each combination's vectors are combined once and scored under
            every mode.

        Returns
        -------
        list of CombinationScore
            For one mode: in the order of ``combinations``; for several: mode by mode, each in
            the order of ``combinations``.
        """
        modes = _whitening_modes(whitening)
        idxs = [normalize_combination(c, self.n_hidden_states) for c in combinations]
        keys = [(i, w) for w in modes for i in idxs]
        todo: dict[tuple[int, ...], list[str]] = {}
        for i, w in dict.fromkeys(keys):
            if (i, w) not in self._memo:
                todo.setdefault(i, []).append(w)
        if todo:
            # longest first, so no thread is left with a long job at the end: single hidden
            # states of LayerNorm models have a singular covariance (the pivoted or the
            # eigendecomposition path, both slower), and more modes mean more work (stable sort)
            jobs = sorted(((i, tuple(ws)) for i, ws in todo.items()),
                          key=lambda job: (-len(job[1]), len(job[0]) > 1))
            t0 = time.perf_counter()
            with _single_threaded_blas():
                if self.n_jobs == 1 or len(jobs) == 1:
                    done = [self._compute(*job) for job in jobs]
                else:
                    from concurrent.futures import ThreadPoolExecutor

                    with ThreadPoolExecutor(min(self.n_jobs, len(jobs))) as pool:
                        done = list(pool.map(lambda job: self._compute(*job), jobs))
            self.seconds += time.perf_counter() - t0
            for scores in done:
                self.n_scored += len(scores)
                self._memo.update(((sc.layers, sc.whitening), sc) for sc in scores)
        return [self._memo[k] for k in keys]


def evaluate_pairs(scorer: CombinationScorer, *,
                   whitening: str | Sequence[str] = LAYER_WHITENING_MODES) -> tuple[CombinationScore, ...]:
    """Score every pair ``(i, j)``, ``i <= j`` (``i == j``: the single layer) of hidden states.

    Returns
    -------
    tuple of CombinationScore
        ``K (K + 1) / 2`` entries per whitening mode (28 for a 6-layer model), ordered by
        whitening mode, then ``i``, then ``j``.
    """
    K = scorer.n_hidden_states
    combos = [(i,) if i == j else (i, j) for i in range(K) for j in range(i, K)]
    return tuple(scorer.score_many(combos, _whitening_modes(whitening)))


@dataclass(frozen=True)
class SizeBest:
    """Best combination of exactly ``n_layers`` hidden states (one point of Figure 2).

    Attributes
    ----------
    n_layers : int
    whitening : {"none", "year"}
    best : CombinationScore
    n_evaluated : int
        Combinations of this size that were scored.
    n_possible : int
        C(K, n_layers) for K candidate hidden states.
    method : {"exhaustive", "beam"}
    """

    n_layers: int
    whitening: str
    best: CombinationScore
    n_evaluated: int
    n_possible: int
    method: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable dict."""
        return {"n_layers": self.n_layers, "whitening": self.whitening,
                "best": self.best.to_dict(), "n_evaluated": self.n_evaluated,
                "n_possible": self.n_possible, "method": self.method}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "SizeBest":
        """Inverse of :meth:`to_dict`."""
        return cls(int(d["n_layers"]), str(d["whitening"]),
                   CombinationScore.from_dict(d["best"]), int(d["n_evaluated"]),
                   int(d["n_possible"]), str(d["method"]))


def search_combinations(scorer: CombinationScorer, *,
                        whitening: str | Sequence[str] = LAYER_WHITENING_MODES,
                        max_layers: int | None = None,
                        include_embedding_layer: bool = True,
                        exhaustive_limit: int = DEFAULT_EXHAUSTIVE_LIMIT,
                        beam_width: int = DEFAULT_BEAM_WIDTH) -> tuple[SizeBest, ...]:
    """Best combination for each number of combined hidden states (Figure 2).

    Parameters
    ----------
    scorer : CombinationScorer
    whitening : {"none", "year"} or sequence of them
        Each mode is searched independently (the best combination may differ).
    max_layers : int, optional
        Largest number of combined hidden states (default: all candidates).
    include_embedding_layer : bool
        Whether hidden state 0 (the non-contextual embedding output) is a candidate; the
        authors' search includes it.
    exhaustive_limit : int
        Sizes with at most this many combinations are searched exhaustively.
    beam_width : int
        Above the limit, the ``beam_width`` best combinations of the previous size are each
        extended by one candidate (a greedy beam search: the optimum may be missed).

    Returns
    -------
    tuple of SizeBest
        One entry per (whitening mode, size), sizes ascending; ties broken by the
        lexicographically smallest layer tuple.
    """
    exhaustive_limit = check_positive_int("exhaustive_limit", exhaustive_limit)
    beam_width = check_positive_int("beam_width", beam_width)
    candidates = tuple(range(0 if include_embedding_layer else 1, scorer.n_hidden_states))
    K = len(candidates)
    top = K if max_layers is None else min(check_positive_int("max_layers", max_layers), K)
    out = []
    for w in _whitening_modes(whitening):
        ranked: list[tuple[int, ...]] = []
        for m in range(1, top + 1):
            total = math.comb(K, m)
            if total <= exhaustive_limit or not ranked:
                combos = list(itertools.combinations(candidates, m))
                method = "exhaustive"
            else:
                combos = sorted({tuple(sorted(seed + (c,))) for seed in ranked[:beam_width]
                                 for c in candidates if c not in seed})
                method = "beam"
            scores = sorted(scorer.score_many(combos, w), key=_rank_key)
            ranked = [s.layers for s in scores]
            out.append(SizeBest(m, w, scores[0], len(scores), total, method))
    return tuple(out)


@dataclass(frozen=True)
class LayerTimings:
    """Wall times of one layer analysis (seconds).

    Attributes
    ----------
    forward_s : float
        Computing (or loading from the cache) the per-layer vectors of all sentences.
    cache_hit : bool
        Whether the per-layer vectors came from the disk cache.
    pairs_s : float
        Scoring all pairs (Figure 1), both whitening modes.
    search_s : float
        Scoring the extra combinations of the size search (Figure 2).
    n_scored : int
        Distinct (combination, whitening) pairs scored.
    """

    forward_s: float
    cache_hit: bool
    pairs_s: float
    search_s: float
    n_scored: int

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable dict."""
        return {"forward_s": self.forward_s, "cache_hit": self.cache_hit,
                "pairs_s": self.pairs_s, "search_s": self.search_s, "n_scored": self.n_scored}


@dataclass(frozen=True)
class LayerAnalysis:
    """Result of :func:`analyze_layers`: Figure 1 (all pairs) and Figure 2 (best per size).

    Attributes
    ----------
    model : str
        Model name as given.
    encoder : dict
        The encoder's self-description (``config_dict()``).
    pooling, text_variant, aggregation : str
    n_components : int or None
        Whitening dimension k (``None``: all d).
    n_hidden_states : int
        K = L + 1.
    n_sentences : int
        Distinct sentences encoded.
    tasks : tuple of str
    pairs : tuple of CombinationScore
        Every ``(i, j)``, ``i <= j``, per whitening mode.
    by_size : tuple of SizeBest
        Best combination per size and whitening mode.
    include_embedding_layer : bool
        Whether hidden state 0 was a candidate of the size search.
    exhaustive_limit, beam_width : int
        Search budget (see :func:`search_combinations`).
    timings : LayerTimings
    combination : str
        What a combination computes (see the module docstring).
    """

    model: str
    encoder: dict[str, Any]
    pooling: str
    text_variant: str
    aggregation: str
    n_components: int | None
    n_hidden_states: int
    n_sentences: int
    tasks: tuple[str, ...]
    pairs: tuple[CombinationScore, ...]
    by_size: tuple[SizeBest, ...]
    include_embedding_layer: bool
    exhaustive_limit: int
    beam_width: int
    timings: LayerTimings
    combination: str = field(default=COMBINATION_NOTE)

    @property
    def whitening_modes(self) -> tuple[str, ...]:
        """Whitening modes present, in order."""
        return tuple(dict.fromkeys(p.whitening for p in self.pairs))

    def pair_matrix(self, whitening: str = "none") -> np.ndarray:
        """Figure 1 as a symmetric ``(K, K)`` float64 array (NaN where not scored)."""
        M = np.full((self.n_hidden_states,) * 2, np.nan)
        for p in self.pairs:
            if p.whitening == whitening:
                i, j = (p.layers[0], p.layers[-1])
                M[i, j] = M[j, i] = p.average
        return M

    def best_pair(self, whitening: str = "none") -> CombinationScore:
        """Best entry of Figure 1 for ``whitening`` (ties: smallest layer tuple)."""
        cands = [p for p in self.pairs if p.whitening == whitening]
        if not cands:
            raise ValueError(f"no pair scores for whitening={whitening!r}; "
                             f"available: {list(self.whitening_modes)}")
        return min(cands, key=_rank_key)

    def curve(self, whitening: str = "none") -> tuple[SizeBest, ...]:
        """Figure 2 points for ``whitening``, sizes ascending."""
        return tuple(s for s in self.by_size if s.whitening == whitening)

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable dict (round-trips through :meth:`from_dict`)."""
        return {
            "model": self.model, "encoder": dict(self.encoder), "pooling": self.pooling,
            "text_variant": self.text_variant, "aggregation": self.aggregation,
            "n_components": self.n_components, "n_hidden_states": self.n_hidden_states,
            "n_sentences": self.n_sentences, "tasks": list(self.tasks),
            "combination": self.combination,
            "search": {"include_embedding_layer": self.include_embedding_layer,
                       "exhaustive_limit": self.exhaustive_limit, "beam_width": self.beam_width},
            "timings": self.timings.to_dict(),
            "pairs": [p.to_dict() for p in self.pairs],
            "by_size": [s.to_dict() for s in self.by_size],
        }

    def to_json(self) -> str:
        """Indented JSON text of :meth:`to_dict`."""
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "LayerAnalysis":
        """Inverse of :meth:`to_dict`."""
        s, t = d["search"], d["timings"]
        return cls(
            model=str(d["model"]), encoder=dict(d["encoder"]), pooling=str(d["pooling"]),
            text_variant=str(d["text_variant"]), aggregation=str(d["aggregation"]),
            n_components=d["n_components"], n_hidden_states=int(d["n_hidden_states"]),
            n_sentences=int(d["n_sentences"]), tasks=tuple(d["tasks"]),
            pairs=tuple(CombinationScore.from_dict(p) for p in d["pairs"]),
            by_size=tuple(SizeBest.from_dict(x) for x in d["by_size"]),
            include_embedding_layer=bool(s["include_embedding_layer"]),
            exhaustive_limit=int(s["exhaustive_limit"]), beam_width=int(s["beam_width"]),
            timings=LayerTimings(float(t["forward_s"]), bool(t["cache_hit"]),
                                 float(t["pairs_s"]), float(t["search_s"]), int(t["n_scored"])),
            combination=str(d.get("combination", COMBINATION_NOTE)))

    def to_markdown(self) -> str:
        """Markdown: settings, the Figure-1 grids, the Figure-2 table and the timings."""
        K = self.n_hidden_states
        lines = [f"# Layer analysis: {self.model} ({self.pooling} pooling)", "",
                 f"- Tasks: {', '.join(self.tasks)} ({self.n_sentences} distinct sentences, "
                 f"text variant `{self.text_variant}`); score = {self.aggregation} over "
                 "subsets per task, then mean of the task scores (Spearman rho x 100).",
                 f"- Hidden states 0..{K - 1} (0 = embedding output, {K - 1} = last layer); "
                 f"{self.combination}.",
                 "- Whitening `year`: fitted per STS year on the sentences of all scored pairs of "
                 "that year (STS-B / SICK-R: the test split), as in the paper"
                 + ("" if self.n_components is None else f"; k = {self.n_components}") + ".", ""]
        for w in self.whitening_modes:
            M = self.pair_matrix(w)
            best = self.best_pair(w)
            lines += [f"## Figure 1: every pair (i, j), whitening = {w}", "",
                      f"Best single layer or pair: **{best.label}** = {best.average:.2f}.", "",
                      "| i \\ j | " + " | ".join(f"L{j}" for j in range(K)) + " |",
                      "|---|" + "---:|" * K]
            for i in range(K):
                cells = [f"{M[i, j]:.2f}" if j >= i else "" for j in range(K)]
                lines.append(f"| L{i} | " + " | ".join(cells) + " |")
            lines.append("")
        lines += ["## Figure 2: best combination per number of hidden states", ""]
        if not self.by_size:
            lines += ["Not searched (pairs only, `--max-combination 0`).", ""]
        else:
            lines += ["candidates: hidden states "
                      + ("0" if self.include_embedding_layer else "1") + f"..{K - 1}; "
                      f"exhaustive when C(K, m) <= {self.exhaustive_limit}, else beam search of "
                      f"width {self.beam_width}.", "",
                      "| whitening | m | best combination | avg | searched |",
                      "|---|---:|---|---:|---|"]
        for s in self.by_size:
            lines.append(f"| {s.whitening} | {s.n_layers} | {s.best.label} | "
                         f"{s.best.average:.2f} | {s.method} ({s.n_evaluated} of "
                         f"{s.n_possible}) |")
        t = self.timings
        lines += ["", "## Wall times", "",
                  f"- per-layer vectors: {t.forward_s:.1f} s "
                  f"({'disk cache hit' if t.cache_hit else 'one forward pass'})",
                  f"- all pairs scored: {t.pairs_s:.1f} s; size search (extra combinations): "
                  f"{t.search_s:.1f} s; {t.n_scored} (combination, whitening) scorings in all",
                  ""]
        return "\n".join(lines)


def pooled_layer_vectors(encoder: Any, sentences: Sequence[str], *,
                         pooling: str | Sequence[str] = "mean", text_variant: str = "senteval",
                         cache: Any = None, batch_size: int | None = None,
                         show_progress_bar: bool | None = None, background_save: bool = False
                         ) -> tuple[dict[str, np.ndarray], bool, float]:
    """Per-layer pooled vectors of ``sentences``, from the disk cache or one forward pass.

    Parameters
    ----------
    encoder : TransformerEncoder
        Anything with ``encode_layers(sentences, pooling=tuple, ...) -> dict``.
    sentences : sequence of str
    pooling : str or sequence of str
        Each mode is cached under its own key; all missing modes come from ONE forward pass.
    text_variant : str
        Recorded in the cache key (which text the sentences are).
    cache : sentvec.cache.VectorCache, optional
        ``None``: no caching.
    batch_size, show_progress_bar : optional
        Passed to ``encode_layers``.
    background_save : bool
        Return while new cache entries are still being written (background thread); the caller
        must call ``cache.finish_writes()`` before exiting and must not modify the arrays.
        Otherwise the writes are finished before returning. Either way a failed write is a
        :class:`sentvec.cache.CacheWarning`, never an error.

    Returns
    -------
    vectors : dict of str to ndarray of shape (n, L + 1, d), float32
    cache_hit : bool
        True when every pooling came from the cache (no forward pass ran).
    seconds : float
        Wall time of loading and/or computing.

    Raises
    ------
    TypeError
        If the encoder has no ``encode_layers`` (e.g. Sent2Vec: it has no layers).
    """
    vectors, hit, unsaved, seconds = _layer_vectors(
        encoder, sentences, pooling=pooling, text_variant=text_variant, cache=cache,
        batch_size=batch_size, show_progress_bar=show_progress_bar)
    _save_layer_vectors(cache, unsaved, wait=not background_save)
    return vectors, hit, seconds


def _layer_vectors(encoder: Any, sentences: Sequence[str], *, pooling: str | Sequence[str],
                   text_variant: str, cache: Any, batch_size: int | None,
                   show_progress_bar: bool | None
                   ) -> tuple[dict[str, np.ndarray], bool, list[tuple[Any, np.ndarray]], float]:
    """:func:`pooled_layer_vectors` without writing the cache: returns the vectors, the cache
    hit flag, the ``(cache key, array)`` entries still to be saved and the seconds."""
    from sentvec.cache import encoder_cache_key

    if not callable(getattr(encoder, "encode_layers", None)):
        raise TypeError(f"{type(encoder).__name__} has no encode_layers(); the layer analysis "
                        "needs a transformer encoder")
    poolings = (pooling,) if isinstance(pooling, str) else tuple(dict.fromkeys(pooling))
    sentences = list(sentences)
    t0 = time.perf_counter()
    keys = {p: encoder_cache_key(encoder, sentences, kind="layers", pooling=p,
                                 text_variant=text_variant) for p in poolings}
    out: dict[str, np.ndarray] = {}
    if cache is not None:
        for p in poolings:
            arr = cache.load(keys[p])
            if arr is not None:
                out[p] = arr
    missing = tuple(p for p in poolings if p not in out)
    if missing:
        kwargs: dict[str, Any] = {"show_progress_bar": show_progress_bar}
        if batch_size is not None:
            kwargs["batch_size"] = batch_size
        computed = encoder.encode_layers(sentences, pooling=missing, **kwargs)
        if not isinstance(computed, Mapping) or not set(missing) <= set(computed):
            got = sorted(computed) if isinstance(computed, Mapping) else type(computed).__name__
            raise ValueError(f"{type(encoder).__name__}.encode_layers(pooling={missing}) "
                             f"returned {got}, not a dict holding every requested pooling")
        for p in missing:
            out[p] = np.ascontiguousarray(computed[p], dtype=np.float32)
    unsaved = [(keys[p], out[p]) for p in missing] if cache is not None else []
    return {p: out[p] for p in poolings}, not missing, unsaved, time.perf_counter() - t0


def _save_layer_vectors(cache: Any, entries: list[tuple[Any, np.ndarray]], *,
                        wait: bool) -> None:
    """Write the entries in the cache's background thread; with ``wait``, finish them (a
    failed write is a CacheWarning, never an error)."""
    if cache is None:
        return
    for key, arr in entries:
        cache.save(key, arr, background=True)
    if wait:
        cache.finish_writes()


def analyze_layers(encoder: Any, tasks: Sequence[Any] | None = None, *, pooling: str = "mean",
                   whitening: str | Sequence[str] = LAYER_WHITENING_MODES,
                   max_layers: int | None = None, include_embedding_layer: bool = True,
                   exhaustive_limit: int = DEFAULT_EXHAUSTIVE_LIMIT,
                   beam_width: int = DEFAULT_BEAM_WIDTH, search: bool = True,
                   aggregation: str = "mean", n_components: int | None = None,
                   cache: Any = None, batch_size: int | None = None,
                   show_progress_bar: bool | None = None,
                   model_name: str | None = None,
                   background_save: bool = False) -> LayerAnalysis:
    """Figure 1 and Figure 2 of WhiteningBERT for one encoder, from one forward pass.

    Parameters
    ----------
    encoder : TransformerEncoder
    tasks : list of STSTask, optional
        Default: all seven STS tasks in the encoder's preferred text variant.
    pooling : {"mean", "cls", "max"}
        Token pooling of every hidden state (see the module docstring for max).
    whitening : sequence of {"none", "year"}
    max_layers, include_embedding_layer, exhaustive_limit, beam_width
        Size search (Figure 2), see :func:`search_combinations`.
    search : bool
        ``False`` scores the pairs only (Figure 1).
    aggregation : {"mean", "wmean", "all"}
    n_components : int, optional
        Whitening dimension k.
    cache : sentvec.cache.VectorCache, optional
        Per-layer vectors are loaded from it, or computed and then written to it after the
        scoring.
    model_name : str, optional
        Label for the result (default: the encoder's ``model`` description).
    background_save : bool
        Return while a new cache entry is still being written; the caller must call
        ``cache.finish_writes()`` before exiting. Otherwise the write is finished first.

    Returns
    -------
    LayerAnalysis

    Raises
    ------
    ValueError
        Unknown whitening mode, pooling or aggregation, a non-positive limit, or
        ``n_components`` above the encoder's dimension: all before the forward pass.
    TypeError
        The encoder has no ``encode_layers`` (e.g. Sent2Vec).
    """
    from sentvec.encoders.base import check_n_components, describe_encoder, text_variant_of
    from sentvec.encoders.pooling import POOLING_MODES
    from sentvec.evaluation.results import AGGREGATIONS
    from sentvec.evaluation.sts import load_sts, unique_sentences

    # every option is checked before the forward pass, which is most of the cost
    whitening = _whitening_modes(whitening)
    check_choice("pooling", pooling, POOLING_MODES)
    check_choice("aggregation", aggregation, AGGREGATIONS)
    exhaustive_limit = check_positive_int("exhaustive_limit", exhaustive_limit)
    beam_width = check_positive_int("beam_width", beam_width)
    if max_layers is not None:
        max_layers = check_positive_int("max_layers", max_layers)
    if n_components is not None:
        n_components = check_positive_int("n_components", n_components)
        check_n_components(encoder, n_components)
    task_list = list(tasks) if tasks is not None else load_sts(variant=text_variant_of(encoder))
    variants = sorted({t.variant for t in task_list})
    variant = variants[0] if len(variants) == 1 else "+".join(variants)
    sentences = unique_sentences(task_list)
    start_combination_warm_up()  # all kernels, in one thread, during the forward pass
    vectors, hit, unsaved, forward_s = _layer_vectors(
        encoder, sentences, pooling=pooling, text_variant=variant, cache=cache,
        batch_size=batch_size, show_progress_bar=show_progress_bar)
    try:
        scorer = CombinationScorer(vectors[pooling], task_list, sentences,
                                   aggregation=aggregation, n_components=n_components)
        pairs = evaluate_pairs(scorer, whitening=whitening)
        pairs_s = scorer.seconds
        by_size: tuple[SizeBest, ...] = ()
        if search:
            by_size = search_combinations(scorer, whitening=whitening, max_layers=max_layers,
                                          include_embedding_layer=include_embedding_layer,
                                          exhaustive_limit=exhaustive_limit,
                                          beam_width=beam_width)
    finally:
        # a new cache entry is written after the scoring, which keeps both cores busy; with
        # background_save the caller's single-threaded tail (files, plots) overlaps with it
        _save_layer_vectors(cache, unsaved, wait=not background_save)
    desc = describe_encoder(encoder)
    return LayerAnalysis(
        model=model_name or str(desc.get("model", type(encoder).__name__)), encoder=desc,
        pooling=pooling, text_variant=variant, aggregation=aggregation,
        n_components=n_components, n_hidden_states=scorer.n_hidden_states,
        n_sentences=len(sentences), tasks=tuple(t.name for t in task_list), pairs=pairs,
        by_size=by_size, include_embedding_layer=include_embedding_layer,
        exhaustive_limit=exhaustive_limit, beam_width=beam_width,
        timings=LayerTimings(forward_s, hit, pairs_s, scorer.seconds - pairs_s,
                             scorer.n_scored))
