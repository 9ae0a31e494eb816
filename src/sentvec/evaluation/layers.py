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
import math
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from sentvec._parallel import available_cpus
from sentvec._validation import check_choice, check_positive_int
from sentvec.encoders.base import Encoder
from sentvec.encoders.pooling import normalize_layers
from sentvec.evaluation._kernels import load_kernels
from sentvec.evaluation.layer_results import (
    LAYER_WHITENING_MODES,
    CombinationScore,
    LayerAnalysis,
    LayerTimings,
    SizeBest,
    layer_label,
    rank_key,
)
from sentvec.evaluation.results import describe_postprocessor
from sentvec.evaluation.sts import STSScorer, _check_year_postprocessor
from sentvec.whitening import check_n_components

__all__ = [
    "DEFAULT_EXHAUSTIVE_LIMIT",
    "DEFAULT_BEAM_WIDTH",
    "normalize_combination",
    "combine_layers",
    "CombinationScorer",
    "evaluate_pairs",
    "search_combinations",
    "analyze_layers",
]

DEFAULT_EXHAUSTIVE_LIMIT = 128
DEFAULT_BEAM_WIDTH = 8


def normalize_combination(layers: Sequence[int] | int, n_hidden_states: int) -> tuple[int, ...]:
    """Validated hidden-state indices as a sorted tuple in ``[0, K)`` (a combination is a set).

    The check is :func:`sentvec.encoders.pooling.normalize_layers` (negative indices count from
    the end, -1 = last layer).

    Raises
    ------
    ValueError
        Empty, non-integer, out-of-range or repeated indices (the message names the valid range).
    """
    return tuple(sorted(normalize_layers(layers, n_hidden_states)))


def _whitening_modes(whitening: str | Sequence[str]) -> tuple[str, ...]:
    """One mode or a sequence of them -> validated, de-duplicated tuple (order kept)."""
    modes = (whitening,) if isinstance(whitening, str) else tuple(dict.fromkeys(whitening))
    if not modes:
        raise ValueError(
            f"whitening=() is invalid; name at least one of {list(LAYER_WHITENING_MODES)}"
        )
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
        raise ValueError(
            f"per_layer must have shape (n_sentences, n_hidden_states, dim), got {P.shape}"
        )
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


def _check_postprocessor(
    postprocessor: Any, n_components: int | None, n_features: int | None
) -> Any:
    """The scorer's checks of a per-year postprocessor (``STSScorer.score_modes``' own), and
    its integer ``n_components`` (if any) against the width d, so a bad D fails before any
    scoring or forward pass."""
    if postprocessor is None:
        return None
    _check_year_postprocessor(postprocessor, ("year",), n_components)
    own = getattr(postprocessor, "n_components", None)
    if isinstance(own, (int, np.integer)) and not isinstance(own, bool):
        check_n_components(
            int(own), n_features, name=f"{type(postprocessor).__name__}.n_components"
        )
    return postprocessor


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
    postprocessor : unfitted scikit-learn transformer, optional
        Fitted per STS year in the ``"year"`` mode instead of a Whitening, on the same fit set
        (both sides of the year's scored pairs, repeat counts as ``sample_weight``; a clone
        per task and combination), e.g. ``AllButTheTop(n_components=D)`` (Mu & Viswanath,
        ICLR 2018). Passed to :meth:`STSScorer.score_modes`, so a score equals
        ``score_sts(..., whitening="year", postprocessor=postprocessor)`` of
        :func:`combine_layers`. Its own ``n_components`` (if any) must not exceed d; the
        scorer's ``n_components`` must then be None.
    n_jobs : int, optional
        Combinations scored concurrently by :meth:`score_many` (threads, each with
        single-threaded BLAS via threadpoolctl). Default: the number of usable CPUs. Scoring
        is mostly small BLAS/LAPACK calls (d x d scatter and Cholesky per task and
        combination); one multi-threaded BLAS call at a time was 5-8x slower on a shared
        2-core machine (threads waiting for each other), so parallelism is across combinations.
        Every heavy step releases the GIL (numpy BLAS, LAPACK through ``sentvec.whitening._lapack``,
        the compiled cosine kernel), so two threads give about 1.8x on 2 cores.
    """

    def __init__(
        self,
        per_layer: np.ndarray,
        tasks: Sequence[Any],
        sentences: Sequence[str],
        *,
        aggregation: str = "mean",
        n_components: int | None = None,
        postprocessor: Any = None,
        n_jobs: int | None = None,
    ) -> None:
        self.per_layer = _check_per_layer(per_layer)
        if self.per_layer.shape[0] != len(sentences):
            raise ValueError(
                f"per_layer has {self.per_layer.shape[0]} rows but "
                f"{len(sentences)} sentences were given"
            )
        # pair rows, fit-set counts and golds prepared once for every combination
        self._sts = STSScorer(tasks, sentences)
        self.aggregation = aggregation
        self.n_components = n_components
        self.n_hidden_states = int(self.per_layer.shape[1])
        self.n_components = check_n_components(n_components, int(self.per_layer.shape[2]))
        self.postprocessor = _check_postprocessor(
            postprocessor, n_components, int(self.per_layer.shape[2])
        )
        # finite and small enough that no sum of L + 1 of them overflows: then no combined
        # array needs its own finiteness check (min and max are NaN or infinite if any value
        # is: two passes, no temporary array)
        P = self.per_layer
        lo, hi = (float(P.min()), float(P.max())) if P.size else (0.0, 0.0)
        self._safe = bool(
            P.size
            and math.isfinite(lo)
            and math.isfinite(hi)
            and max(-lo, hi) <= np.finfo(P.dtype).max / P.shape[1]
        )
        load_kernels()  # here, before any scoring thread (see load_kernels)
        self._memo: dict[tuple[tuple[int, ...], str], CombinationScore] = {}
        self.n_scored = 0
        self.seconds = 0.0
        if n_jobs is None:
            n_jobs = available_cpus()
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
        emb = combine_layers(self.per_layer, idx)
        if not self._safe and not np.isfinite(emb).all():
            bad = [f"L{i}" for i in idx if not np.isfinite(self.per_layer[:, i, :]).all()]
            raise ValueError(
                f"the combination {layer_label(idx)} has {int((~np.isfinite(emb)).sum())} "
                "non-finite values: "
                + (
                    f"per_layer holds NaN or inf in {', '.join(bad)}"
                    if bad
                    else "the finite per-layer values are too large and their sum overflows "
                    f"{emb.dtype}"
                )
            )
        # each task's rows are gathered once and scored under every mode
        return self._sts.score_modes(
            lambda rows: emb[rows],
            modes,
            n_components=self.n_components,
            aggregation=self.aggregation,
            postprocessor=self.postprocessor if "year" in modes else None,
        )

    def _compute(self, idx: tuple[int, ...], modes: tuple[str, ...]) -> list[CombinationScore]:
        return [
            CombinationScore(
                idx,
                w,
                float(res.average),
                tuple((str(k), float(v)) for k, v in res.task_scores.items()),
            )
            for w, res in zip(modes, self._results(idx, modes), strict=True)
        ]

    def score(self, layers: Sequence[int] | int, whitening: str = "none") -> CombinationScore:
        """Return the (memoised) :class:`CombinationScore` of one combination."""
        return self.score_many([layers], whitening)[0]

    def score_many(
        self, combinations: Sequence[Sequence[int] | int], whitening: str | Sequence[str] = "none"
    ) -> list[CombinationScore]:
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
            # states of LayerNorm models have a singular covariance (the slower eigen solver),
            # and more modes mean more work (stable sort)
            jobs = sorted(
                ((i, tuple(ws)) for i, ws in todo.items()),
                key=lambda job: (-len(job[1]), len(job[0]) > 1),
            )
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


def evaluate_pairs(
    scorer: CombinationScorer, *, whitening: str | Sequence[str] = LAYER_WHITENING_MODES
) -> tuple[CombinationScore, ...]:
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


def search_combinations(
    scorer: CombinationScorer,
    *,
    whitening: str | Sequence[str] = LAYER_WHITENING_MODES,
    max_layers: int | None = None,
    include_embedding_layer: bool = True,
    exhaustive_limit: int = DEFAULT_EXHAUSTIVE_LIMIT,
    beam_width: int = DEFAULT_BEAM_WIDTH,
) -> tuple[SizeBest, ...]:
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
                combos = sorted(
                    {
                        tuple(sorted(seed + (c,)))
                        for seed in ranked[:beam_width]
                        for c in candidates
                        if c not in seed
                    }
                )
                method = "beam"
            scores = sorted(scorer.score_many(combos, w), key=rank_key)
            ranked = [s.layers for s in scores]
            out.append(SizeBest(m, w, scores[0], len(scores), total, method))
    return tuple(out)


def analyze_layers(
    encoder: Encoder,
    tasks: Sequence[Any] | None = None,
    *,
    pooling: str = "mean",
    whitening: str | Sequence[str] = LAYER_WHITENING_MODES,
    max_layers: int | None = None,
    include_embedding_layer: bool = True,
    exhaustive_limit: int = DEFAULT_EXHAUSTIVE_LIMIT,
    beam_width: int = DEFAULT_BEAM_WIDTH,
    search: bool = True,
    aggregation: str = "mean",
    n_components: int | None = None,
    postprocessor: Any = None,
    cache: Any = None,
    batch_size: int | None = None,
    show_progress_bar: bool | None = None,
    model_name: str | None = None,
    background_save: bool = False,
) -> LayerAnalysis:
    """Figure 1 and Figure 2 of WhiteningBERT for one encoder, from one forward pass.

    Parameters
    ----------
    encoder : TransformerEncoder
    tasks : list of STSTask, optional
        Default: all seven STS tasks in the encoder's preferred text variant.
    pooling : {"mean", "cls", "max"}
        Token pooling of every hidden state (see the module docstring for max).
    whitening, max_layers, include_embedding_layer, exhaustive_limit, beam_width
        Modes scored ({"none", "year"}) and the size search (Figure 2), as
        :func:`search_combinations`.
    search : bool
        ``False`` scores the pairs only (Figure 1).
    aggregation : {"mean", "wmean", "all"}
    n_components : int, optional
        Whitening dimension k.
    postprocessor : unfitted scikit-learn transformer, optional
        Fitted per STS year in the ``"year"`` mode instead of a Whitening, e.g.
        ``AllButTheTop(n_components=D)`` (:class:`CombinationScorer`); recorded in the result.
    cache : sentvec.cache.VectorCache, optional
        Per-layer vectors are read from it, or computed and written to it after the scoring.
    model_name : str, optional
        Label for the result (default: the encoder's ``model`` description).
    background_save : bool
        Return while a new cache entry is still being written (then call
        ``cache.finish_writes()`` before exiting).

    Returns
    -------
    LayerAnalysis

    Raises
    ------
    ValueError
        Before the forward pass: an unknown whitening mode, pooling or aggregation, a limit
        below 1, ``n_components`` above the width, a bad ``postprocessor``.
    TypeError
        The encoder has no ``encode_layers`` (e.g. Sent2Vec).
    """
    from sentvec.cache import save_layer_vectors
    from sentvec.encoders.base import describe_encoder, output_dimension

    # every option is checked before the forward pass, which is most of the cost
    search_options = _search_options(
        whitening, max_layers, include_embedding_layer, exhaustive_limit, beam_width
    )
    _check_scoring_options(pooling, aggregation)
    n_components = check_n_components(n_components, output_dimension(encoder))
    _check_postprocessor(postprocessor, n_components, output_dimension(encoder))
    task_list, variant, sentences, per_layer, hit, unsaved, forward_s = _layer_vectors(
        encoder, tasks, pooling, cache, batch_size, show_progress_bar
    )

    def finish() -> None:  # the new cache entry, after the scoring (see background_save)
        save_layer_vectors(cache, unsaved, wait=not background_save)

    scoring = (aggregation, n_components, postprocessor)
    scorer, pairs, pairs_s, by_size = _scored(
        per_layer, task_list, sentences, scoring, search_options, search, finish
    )
    desc = describe_encoder(encoder)
    return LayerAnalysis(
        model=model_name or str(desc.get("model", type(encoder).__name__)),
        encoder=desc,
        pooling=pooling,
        text_variant=variant,
        aggregation=aggregation,
        n_components=n_components,
        n_hidden_states=scorer.n_hidden_states,
        n_sentences=len(sentences),
        tasks=tuple(t.name for t in task_list),
        pairs=pairs,
        by_size=by_size,
        include_embedding_layer=include_embedding_layer,
        exhaustive_limit=search_options["exhaustive_limit"],
        beam_width=search_options["beam_width"],
        timings=LayerTimings(forward_s, hit, pairs_s, scorer.seconds - pairs_s, scorer.n_scored),
        postprocessing=(None if postprocessor is None else describe_postprocessor(postprocessor)),
    )


def _layer_vectors(
    encoder: Encoder,
    tasks: Sequence[Any] | None,
    pooling: str,
    cache: Any,
    batch_size: int | None,
    show_progress_bar: bool | None,
) -> tuple[list[Any], str, list[str], np.ndarray, bool, Any, float]:
    """The tasks (default: all seven, in the encoder's text variant), their text variant(s),
    distinct sentences and pooled per-layer vectors, from the cache or one forward pass (not
    saved yet: the new entry is returned with the hit and the seconds)."""
    from sentvec.cache import load_or_encode_layer_vectors
    from sentvec.encoders.base import text_variant_of
    from sentvec.evaluation.sts_data import load_sts, unique_sentences

    task_list = list(tasks) if tasks is not None else load_sts(variant=text_variant_of(encoder))
    variants = sorted({t.variant for t in task_list})
    variant = variants[0] if len(variants) == 1 else "+".join(variants)
    sentences = unique_sentences(task_list)
    vectors, hit, unsaved, forward_s = load_or_encode_layer_vectors(
        encoder,
        sentences,
        pooling=pooling,
        text_variant=variant,
        cache=cache,
        batch_size=batch_size,
        show_progress_bar=show_progress_bar,
    )
    return task_list, variant, sentences, vectors[pooling], hit, unsaved, forward_s


def _check_scoring_options(pooling: str, aggregation: str) -> None:
    """ValueError for an unknown token pooling or task-score aggregation."""
    from sentvec.encoders.pooling import POOLING_MODES
    from sentvec.evaluation.results import AGGREGATIONS

    check_choice("pooling", pooling, POOLING_MODES)
    check_choice("aggregation", aggregation, AGGREGATIONS)


def _search_options(
    whitening: str | Sequence[str],
    max_layers: int | None,
    include_embedding_layer: bool,
    exhaustive_limit: int,
    beam_width: int,
) -> dict[str, Any]:
    """:func:`search_combinations`' keyword arguments, the modes and limits checked."""
    return dict(
        whitening=_whitening_modes(whitening),
        max_layers=None if max_layers is None else check_positive_int("max_layers", max_layers),
        include_embedding_layer=include_embedding_layer,
        exhaustive_limit=check_positive_int("exhaustive_limit", exhaustive_limit),
        beam_width=check_positive_int("beam_width", beam_width),
    )


def _scored(
    per_layer: np.ndarray,
    tasks: list[Any],
    sentences: list[str],
    scoring: tuple[str, int | None, Any],
    search_options: dict[str, Any],
    search: bool,
    finish: Callable[[], None],
) -> tuple[CombinationScorer, tuple[CombinationScore, ...], float, tuple[SizeBest, ...]]:
    """Every pair of hidden states scored in the search's whitening modes, then, with
    ``search``, the size search; ``finish`` runs afterwards, whatever happens. Returns the
    scorer, the pairs, the seconds they took and the best combination per size."""
    aggregation, n_components, postprocessor = scoring
    try:
        scorer = CombinationScorer(
            per_layer,
            tasks,
            sentences,
            aggregation=aggregation,
            n_components=n_components,
            postprocessor=postprocessor,
        )
        pairs = evaluate_pairs(scorer, whitening=search_options["whitening"])
        pairs_s = scorer.seconds
        by_size = search_combinations(scorer, **search_options) if search else ()
    finally:
        finish()
    return scorer, pairs, pairs_s, by_size
