"""Result records of the evaluations: frozen dataclasses with JSON and table rendering.

:class:`JSONRecord` is a small mixin (``to_dict`` / ``to_json``) any frozen result dataclass can
reuse. :class:`STSResult` holds STS scores (Spearman and Pearson x 100) per subset and per task
under the three aggregations in use (see :data:`AGGREGATIONS`);
:func:`results_table_markdown` / :func:`results_table_text` render WhiteningBERT Table 1.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from scipy.stats import rankdata

from sentvec._validation import check_choice

__all__ = [
    "AGGREGATIONS",
    "Aggregation",
    "TABLE_COLUMNS",
    "JSONRecord",
    "WhiteningInfo",
    "STSResult",
    "SubsetScores",
    "correlations",
    "rank_golds",
    "aggregate_scores",
    "results_table_markdown",
    "results_table_text",
    "postprocessing_label",
    "describe_postprocessor",
]

Aggregation = Literal["mean", "wmean", "all"]
#: "mean": unweighted mean of subset scores (WhiteningBERT); "wmean": weighted by subset pair
#: counts (SentEval); "all": one correlation over all subsets' pairs concatenated (SimCSE).
AGGREGATIONS: tuple[str, ...] = ("mean", "wmean", "all")
#: (task name, column header) in WhiteningBERT Table 1 order.
TABLE_COLUMNS: tuple[tuple[str, str], ...] = (
    ("STSBenchmark", "STSB"),
    ("SICKRelatedness", "SICK"),
    ("STS12", "STS12"),
    ("STS13", "STS13"),
    ("STS14", "STS14"),
    ("STS15", "STS15"),
    ("STS16", "STS16"),
)


def _jsonable(value: Any) -> Any:
    """Plain JSON types; NaN/inf become None (standard JSON has no NaN)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return [_jsonable(v) for v in value.tolist()]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        v = float(value)
        return v if math.isfinite(v) else None
    if value is None or isinstance(value, str):
        return value
    return str(value)


class JSONRecord:
    """Mixin for frozen result dataclasses: ``to_dict()`` and ``to_json(path=None)``."""

    def to_dict(self) -> dict[str, Any]:
        """Nested dict of plain JSON types (NaN scores become None)."""
        return _jsonable(self)

    def to_json(self, path: Any = None) -> str:
        """Return the JSON text; also write it atomically to ``path`` when given."""
        data = self.to_dict()
        if path is not None:
            from sentvec._io import atomic_write_json

            atomic_write_json(path, data)
        return json.dumps(data, indent=2, ensure_ascii=False)

    def replace(self, **changes: Any) -> Any:
        """A copy with some fields changed (``dataclasses.replace``)."""
        return dataclasses.replace(self, **changes)  # type: ignore[type-var]


@dataclass(frozen=True)
class WhiteningInfo(JSONRecord):
    """How whitening was applied before the cosine.

    Attributes
    ----------
    mode : str
        "none"; "year" (fit on each task's own scored pairs, WhiteningBERT protocol); "corpus"
        (fit here on a user corpus); "fitted" (a user-fitted Whitening applied to all).
    n_components : int or None
        Dimensions kept (None: all).
    fit_corpus : str or None
        What the whitening was fitted on.
    fit_size : int or None
        Number of fit rows (for "year": summed over tasks; per task in ``fit_sizes``).
    fit_sizes : dict of str to int
    n_dropped : dict of str to int
        Per task, whitening directions dropped as numerically zero (singular covariance).
    """

    mode: str = "none"
    n_components: int | None = None
    fit_corpus: str | None = None
    fit_size: int | None = None
    fit_sizes: dict[str, int] = field(default_factory=dict)
    n_dropped: dict[str, int] = field(default_factory=dict)


# --------------------------------------------------------------------------- correlations
def _pearson(x: np.ndarray, y: np.ndarray) -> float:
    if x.min() == x.max() or y.min() == y.max():  # constant: undefined (not rounding noise)
        return math.nan
    x = x - x.mean()
    y = y - y.mean()
    den = math.sqrt(float(x @ x) * float(y @ y))
    return float(x @ y) / den if den > 0 else math.nan


def correlations(
    pred: Any, gold: Any, *, gold_ranks: np.ndarray | None = None
) -> tuple[float, float]:
    """Spearman and Pearson correlation (not x 100) of two 1-D arrays.

    Spearman = Pearson of average ranks (ties share their mean rank), as ``scipy.stats.spearmanr``.
    Either is NaN when undefined (fewer than 2 values, or one side constant). ``gold_ranks``:
    ``rankdata(gold)`` computed once by a caller that scores many predictions against the same
    gold (:func:`rank_golds`); the result is the same.
    """
    p = np.asarray(pred, dtype=np.float64)
    g = np.asarray(gold, dtype=np.float64)
    if p.shape != g.shape or p.ndim != 1:
        raise ValueError(f"pred and gold must be 1-D of equal length, got {p.shape} and {g.shape}")
    if p.size < 2:
        return math.nan, math.nan
    if gold_ranks is None:
        gold_ranks = rankdata(g)
    else:
        gold_ranks = np.asarray(gold_ranks, dtype=np.float64)
        if gold_ranks.shape != g.shape:
            raise ValueError(f"gold_ranks has shape {gold_ranks.shape}, gold {g.shape}")
    return _pearson(rankdata(p), gold_ranks), _pearson(p, g)


def rank_golds(golds: Mapping[str, Sequence[Any]]) -> dict[str, tuple[list[np.ndarray], Any]]:
    """Average ranks of each task's gold scores, for :func:`aggregate_scores` (``gold_ranks``).

    Returns
    -------
    dict of task name to (list of ndarray, ndarray or None)
        The ranks of each subset's gold scores and of all subsets' golds concatenated (None for
        a single-subset task, whose "all" score is its subset score).
    """
    out: dict[str, tuple[list[np.ndarray], Any]] = {}
    for task, subsets in golds.items():
        arrays = [np.asarray(g, dtype=np.float64) for g in subsets]
        out[task] = (
            [rankdata(g) for g in arrays],
            rankdata(np.concatenate(arrays)) if len(arrays) > 1 else None,
        )
    return out


@dataclass(frozen=True)
class SubsetScores:
    """Raw aggregation output (correlations x 100) before it becomes an :class:`STSResult`."""

    subset_spearman: dict[str, dict[str, float]]
    subset_pearson: dict[str, dict[str, float]]
    subset_n_pairs: dict[str, dict[str, int]]
    spearman: dict[str, dict[str, float]]  # aggregation -> task -> score
    pearson: dict[str, dict[str, float]]
    n_undefined: int


def aggregate_scores(
    preds: Mapping[str, Sequence[Any]],
    golds: Mapping[str, Sequence[Any]],
    subset_names: Mapping[str, Sequence[str]] | None = None,
    *,
    gold_ranks: Mapping[str, tuple[Sequence[np.ndarray], Any]] | None = None,
) -> SubsetScores:
    """Per-subset correlations x 100 and the three task aggregations.

    Parameters
    ----------
    preds, golds : mapping of task name to a list of 1-D arrays (one per subset)
    subset_names : mapping of task name to subset names, optional (default "0", "1", ...)
    gold_ranks : mapping, optional
        :func:`rank_golds` of ``golds``, when many predictions are scored against the same golds
        (the layer search); the scores are identical to computing the ranks here.

    Returns
    -------
    SubsetScores
        ``spearman["mean"][task]``: unweighted mean of the subset scores; ``["wmean"]``: mean
        weighted by subset pair counts; ``["all"]``: correlation of all pairs concatenated
        (equal to the subset score for a single-subset task). A NaN subset score makes the
        task's "mean"/"wmean" NaN; ``n_undefined`` counts the undefined correlations computed.
    """
    sub_s: dict[str, dict[str, float]] = {}
    sub_p: dict[str, dict[str, float]] = {}
    sub_n: dict[str, dict[str, int]] = {}
    agg_s: dict[str, dict[str, float]] = {a: {} for a in AGGREGATIONS}
    agg_p: dict[str, dict[str, float]] = {a: {} for a in AGGREGATIONS}
    n_undefined = 0
    for task, task_preds in preds.items():
        task_golds = list(golds[task])
        names = (
            list(subset_names[task]) if subset_names else [str(i) for i in range(len(task_preds))]
        )
        if not (len(names) == len(task_preds) == len(task_golds)) or not names:
            raise ValueError(f"task {task!r}: preds, golds and subset names disagree in length")
        s_list, p_list, n_list = [], [], []
        ranks, all_ranks = (
            gold_ranks[task] if gold_ranks is not None else ([None] * len(task_golds), None)
        )
        if len(ranks) != len(task_golds):
            raise ValueError(
                f"task {task!r}: gold_ranks has {len(ranks)} subset(s), golds {len(task_golds)}"
            )
        for p, g, gr in zip(task_preds, task_golds, ranks, strict=True):
            rho, r = correlations(p, g, gold_ranks=gr)
            n_undefined += int(math.isnan(rho)) + int(math.isnan(r))
            s_list.append(100.0 * rho)
            p_list.append(100.0 * r)
            n_list.append(len(g))
        sub_s[task] = dict(zip(names, s_list, strict=True))
        sub_p[task] = dict(zip(names, p_list, strict=True))
        sub_n[task] = dict(zip(names, n_list, strict=True))
        w = np.asarray(n_list, dtype=np.float64)
        for agg, values in ((agg_s, s_list), (agg_p, p_list)):
            v = np.asarray(values)
            agg["mean"][task] = float(v.mean())
            agg["wmean"][task] = float((v * w).sum() / w.sum())
        if len(names) == 1:
            agg_s["all"][task], agg_p["all"][task] = s_list[0], p_list[0]
        else:
            rho, r = correlations(
                np.concatenate(task_preds), np.concatenate(task_golds), gold_ranks=all_ranks
            )
            n_undefined += int(math.isnan(rho)) + int(math.isnan(r))
            agg_s["all"][task], agg_p["all"][task] = 100.0 * rho, 100.0 * r
    return SubsetScores(sub_s, sub_p, sub_n, agg_s, agg_p, n_undefined)


def _mean(values: Mapping[str, float]) -> float:
    return float(np.mean(list(values.values()))) if values else math.nan


# --------------------------------------------------------------------------- STSResult
@dataclass(frozen=True)
class STSResult(JSONRecord):
    """STS evaluation result; all scores are correlations x 100.

    Attributes
    ----------
    task_scores : dict of str to float
        Spearman x 100 per task under ``aggregation``.
    average : float
        Mean of ``task_scores`` (WhiteningBERT's "Avg.").
    aggregation : {"mean", "wmean", "all"}
        Which aggregation ``task_scores`` holds.
    subset_scores : dict of str to dict of str to float
        Spearman x 100 per task and subset.
    task_pearson, subset_pearson : Pearson x 100 counterparts.
    scores_by_aggregation, pearson_by_aggregation : dict of aggregation to dict of task to float
        All three aggregations side by side (see :meth:`task_scores_for`).
    n_pairs : dict of str to int
        Scored pairs per task; ``subset_n_pairs`` per subset.
    whitening : WhiteningInfo
    metadata : dict
        Encoder description (model, pooling, layers, ...) and ``text_variant``.
    n_zero_vectors : int
        Zero sentence vectors met while scoring (counted per task); their cosines were set to 0
        (or by the WhiteningBERT rule, see ``score_sts(zero_vectors=...)``).
    n_zero_cosine_pairs : int
        Pairs whose cosine was undefined and set to 0 (or 1.0 / 0.5 by that rule).
    n_undefined : int
        Correlations that were undefined (NaN).
    """

    task_scores: dict[str, float]
    average: float
    aggregation: str
    subset_scores: dict[str, dict[str, float]]
    task_pearson: dict[str, float]
    subset_pearson: dict[str, dict[str, float]]
    scores_by_aggregation: dict[str, dict[str, float]]
    pearson_by_aggregation: dict[str, dict[str, float]]
    n_pairs: dict[str, int]
    subset_n_pairs: dict[str, dict[str, int]]
    whitening: WhiteningInfo = field(default_factory=WhiteningInfo)
    metadata: dict[str, Any] = field(default_factory=dict)
    n_zero_vectors: int = 0
    n_zero_cosine_pairs: int = 0
    n_undefined: int = 0

    @classmethod
    def from_scores(
        cls,
        scores: SubsetScores,
        *,
        aggregation: str = "mean",
        whitening: WhiteningInfo | None = None,
        metadata: Mapping[str, Any] | None = None,
        n_zero_vectors: int = 0,
        n_zero_cosine_pairs: int = 0,
    ) -> STSResult:
        """Build the result from :func:`aggregate_scores` output."""
        check_choice("aggregation", aggregation, AGGREGATIONS)
        task_scores = dict(scores.spearman[aggregation])
        return cls(
            task_scores=task_scores,
            average=_mean(task_scores),
            aggregation=aggregation,
            subset_scores=scores.subset_spearman,
            task_pearson=dict(scores.pearson[aggregation]),
            subset_pearson=scores.subset_pearson,
            scores_by_aggregation=scores.spearman,
            pearson_by_aggregation=scores.pearson,
            n_pairs={t: int(sum(v.values())) for t, v in scores.subset_n_pairs.items()},
            subset_n_pairs=scores.subset_n_pairs,
            whitening=whitening or WhiteningInfo(),
            metadata=dict(metadata or {}),
            n_zero_vectors=int(n_zero_vectors),
            n_zero_cosine_pairs=int(n_zero_cosine_pairs),
            n_undefined=scores.n_undefined,
        )

    def task_scores_for(self, aggregation: str) -> dict[str, float]:
        """Spearman x 100 per task under ``aggregation`` ("mean", "wmean" or "all")."""
        check_choice("aggregation", aggregation, AGGREGATIONS)
        return dict(self.scores_by_aggregation[aggregation])

    def average_for(self, aggregation: str) -> float:
        """Mean of :meth:`task_scores_for` ``(aggregation)``."""
        return _mean(self.task_scores_for(aggregation))

    def with_aggregation(self, aggregation: str) -> STSResult:
        """The same result with ``task_scores`` / ``average`` under another aggregation."""
        check_choice("aggregation", aggregation, AGGREGATIONS)
        return self.replace(
            aggregation=aggregation,
            task_scores=dict(self.scores_by_aggregation[aggregation]),
            task_pearson=dict(self.pearson_by_aggregation[aggregation]),
            average=_mean(self.scores_by_aggregation[aggregation]),
        )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> STSResult:
        """Inverse of :meth:`to_dict` (None scores become NaN)."""

        def scores(d: Mapping[str, Any]) -> dict[str, Any]:
            return {
                k: scores(v) if isinstance(v, Mapping) else (math.nan if v is None else float(v))
                for k, v in d.items()
            }

        try:
            return cls(
                task_scores=scores(data["task_scores"]),
                average=math.nan if data["average"] is None else float(data["average"]),
                aggregation=str(data["aggregation"]),
                subset_scores=scores(data["subset_scores"]),
                task_pearson=scores(data["task_pearson"]),
                subset_pearson=scores(data["subset_pearson"]),
                scores_by_aggregation=scores(data["scores_by_aggregation"]),
                pearson_by_aggregation=scores(data["pearson_by_aggregation"]),
                n_pairs={k: int(v) for k, v in data["n_pairs"].items()},
                subset_n_pairs={
                    t: {k: int(v) for k, v in d.items()} for t, d in data["subset_n_pairs"].items()
                },
                whitening=WhiteningInfo(**data.get("whitening", {})),
                metadata=dict(data.get("metadata", {})),
                n_zero_vectors=int(data.get("n_zero_vectors", 0)),
                n_zero_cosine_pairs=int(data.get("n_zero_cosine_pairs", 0)),
                n_undefined=int(data.get("n_undefined", 0)),
            )
        except (KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"not an STSResult dict: {exc!r}") from exc

    def table_cells(self, *, aggregation: str | None = None, digits: int = 2) -> list[str]:
        """Formatted cells in :data:`TABLE_COLUMNS` order plus Avg ("-" for a missing task)."""
        scores = self.task_scores if aggregation is None else self.task_scores_for(aggregation)
        cells = [_fmt(scores[t], digits) if t in scores else "-" for t, _ in TABLE_COLUMNS]
        cells.append(_fmt(_mean(scores), digits))
        return cells


def _fmt(value: float, digits: int) -> str:
    return "nan" if math.isnan(value) else f"{value:.{digits}f}"


def _table(
    rows: Mapping[str, STSResult], aggregation: str | None, digits: int
) -> tuple[list[str], list[list[str]]]:
    header = ["Model"] + [h for _, h in TABLE_COLUMNS] + ["Avg"]
    body = [
        [label] + res.table_cells(aggregation=aggregation, digits=digits)
        for label, res in rows.items()
    ]
    return header, body


def results_table_markdown(
    rows: Mapping[str, STSResult], *, aggregation: str | None = None, digits: int = 2
) -> str:
    """Markdown table, one row per labelled result, WhiteningBERT Table 1 columns.

    Columns: Model, STSB, SICK, STS12, STS13, STS14, STS15, STS16, Avg (Spearman x 100).
    ``aggregation=None`` uses each result's own ``task_scores``; Avg is the mean of the tasks
    present in that row.
    """
    header, body = _table(rows, aggregation, digits)
    lines = [
        "| " + " | ".join(header) + " |",
        "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|",
    ]
    lines += ["| " + " | ".join(r) + " |" for r in body]
    return "\n".join(lines) + "\n"


def results_table_text(
    rows: Mapping[str, STSResult], *, aggregation: str | None = None, digits: int = 2
) -> str:
    """The same table as :func:`results_table_markdown`, as aligned plain text for a terminal."""
    header, body = _table(rows, aggregation, digits)
    widths = [max(len(r[i]) for r in [header] + body) for i in range(len(header))]
    fmt = [lambda s, w=widths[0]: s.ljust(w)] + [(lambda s, w=w: s.rjust(w)) for w in widths[1:]]
    lines = ["  ".join(f(c) for f, c in zip(fmt, r, strict=True)).rstrip() for r in [header] + body]
    return "\n".join(lines) + "\n"


def describe_postprocessor(postprocessor: Any) -> dict[str, Any]:
    """The post-processing record of an estimator: ``{"method": class name, "params": ...}``.

    ``params`` is ``get_params(deep=False)`` when the estimator has it, else ``{}``. Written into
    ``STSResult.metadata["postprocessing"]`` (with a ``"fit"`` entry) and
    ``LayerAnalysis.postprocessing``; :func:`postprocessing_label` turns it into a label.
    """
    get = getattr(postprocessor, "get_params", None)
    return {
        "method": type(postprocessor).__name__,
        "params": dict(get(deep=False)) if callable(get) else {},
    }


def postprocessing_label(description: Mapping[str, Any] | None) -> str | None:
    """Short label of a post-processing record: ``"AllButTheTop(n_components=4)"``.

    Parameters
    ----------
    description : mapping or None
        ``{"method": class name, "params": {...}}`` as in ``STSResult.metadata
        ["postprocessing"]`` (written by the STS scorer) and ``LayerAnalysis.postprocessing``.

    Returns
    -------
    str or None
        None when ``description`` is not a mapping with a ``"method"``.
    """
    if not isinstance(description, Mapping) or description.get("method") is None:
        return None
    params = ", ".join(f"{k}={v!r}" for k, v in dict(description.get("params") or {}).items())
    return f"{description['method']}({params})"
