"""Results of the layer-combination search (WhiteningBERT Figures 1 and 2) and their Markdown.

:class:`CombinationScore` (one combination of hidden states under one whitening mode),
:class:`SizeBest` (the best combination of each size, Figure 2), :class:`LayerTimings` and
:class:`LayerAnalysis` (everything one ``sentvec layers`` run found, with JSON round trip and a
Markdown summary). The search itself is :mod:`sentvec.evaluation.layers`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

import numpy as np

from sentvec.evaluation.results import postprocessing_label

__all__ = [
    "LAYER_WHITENING_MODES",
    "SEARCH_METHODS",
    "COMBINATION_NOTE",
    "layer_label",
    "rank_key",
    "CombinationScore",
    "SizeBest",
    "LayerTimings",
    "LayerAnalysis",
]

#: Whitening modes of the layer search: none, or fitted per STS year (the paper's protocol).
LayerWhitening = Literal["none", "year"]
LAYER_WHITENING_MODES: tuple[str, ...] = get_args(LayerWhitening)

#: How a size-m group of combinations was searched.
SearchMethod = Literal["exhaustive", "beam"]
SEARCH_METHODS: tuple[str, ...] = get_args(SearchMethod)

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


def rank_key(score: CombinationScore) -> tuple[float, tuple[int, ...]]:
    """Sort key: best average first (NaN, an undefined score, last), then smallest layers."""
    return (-score.average if math.isfinite(score.average) else math.inf, score.layers)


@dataclass(frozen=True)
class CombinationScore:
    """STS score of one combination of hidden states.

    Attributes
    ----------
    layers : tuple of int
        Sorted hidden-state indices (0 = embedding output).
    whitening : {"none", "year"}
        "year": fitted per STS year, a Whitening or the analysis' ``postprocessing``.
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
        return {
            "layers": list(self.layers),
            "label": self.label,
            "whitening": self.whitening,
            "average": _json_float(self.average),
            "task_scores": {k: _json_float(v) for k, v in self.task_scores},
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> CombinationScore:
        """Inverse of :meth:`to_dict`."""
        return cls(
            tuple(int(i) for i in d["layers"]),
            str(d["whitening"]),
            _from_json_float(d["average"]),
            tuple((str(k), _from_json_float(v)) for k, v in dict(d["task_scores"]).items()),
        )


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
        return {
            "n_layers": self.n_layers,
            "whitening": self.whitening,
            "best": self.best.to_dict(),
            "n_evaluated": self.n_evaluated,
            "n_possible": self.n_possible,
            "method": self.method,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> SizeBest:
        """Inverse of :meth:`to_dict`."""
        return cls(
            int(d["n_layers"]),
            str(d["whitening"]),
            CombinationScore.from_dict(d["best"]),
            int(d["n_evaluated"]),
            int(d["n_possible"]),
            str(d["method"]),
        )


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
        return {
            "forward_s": self.forward_s,
            "cache_hit": self.cache_hit,
            "pairs_s": self.pairs_s,
            "search_s": self.search_s,
            "n_scored": self.n_scored,
        }


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
    postprocessing : dict or None
        What the ``"year"`` mode fitted per STS year instead of a Whitening
        (``{"method": class name, "params": get_params(deep=False)}``, e.g. ``{"method": "AllButTheTop", "params":
        {"n_components": 4}}``); None: a Whitening (k = ``n_components``).
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
    postprocessing: dict[str, Any] | None = None

    @property
    def year_method(self) -> str:
        """What the ``"year"`` mode fits per STS year: ``"Whitening(n_components=k)"`` or the
        post-processor as ``Name(param=value, ...)``."""
        if self.postprocessing is None:
            return f"Whitening(n_components={self.n_components!r})"
        return str(postprocessing_label(self.postprocessing))

    def mode_label(self, whitening: str) -> str:
        """Figure and table label of a mode: ``"whitening=none"``, ``"whitening=year"`` or,
        with a post-processor, ``"AllButTheTop(n_components=4) per year"``."""
        if whitening == "year" and self.postprocessing is not None:
            return f"{self.year_method} per year"
        return f"whitening={whitening}"

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
            raise ValueError(
                f"no pair scores for whitening={whitening!r}; "
                f"available: {list(self.whitening_modes)}"
            )
        return min(cands, key=rank_key)

    def curve(self, whitening: str = "none") -> tuple[SizeBest, ...]:
        """Figure 2 points for ``whitening``, sizes ascending."""
        return tuple(s for s in self.by_size if s.whitening == whitening)

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable dict (round-trips through :meth:`from_dict`)."""
        return {
            "model": self.model,
            "encoder": dict(self.encoder),
            "pooling": self.pooling,
            "text_variant": self.text_variant,
            "aggregation": self.aggregation,
            "n_components": self.n_components,
            "n_hidden_states": self.n_hidden_states,
            "n_sentences": self.n_sentences,
            "tasks": list(self.tasks),
            "combination": self.combination,
            "postprocessing": None if self.postprocessing is None else dict(self.postprocessing),
            "search": {
                "include_embedding_layer": self.include_embedding_layer,
                "exhaustive_limit": self.exhaustive_limit,
                "beam_width": self.beam_width,
            },
            "timings": self.timings.to_dict(),
            "pairs": [p.to_dict() for p in self.pairs],
            "by_size": [s.to_dict() for s in self.by_size],
        }

    def to_json(self) -> str:
        """Indented JSON text of :meth:`to_dict`."""
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> LayerAnalysis:
        """Inverse of :meth:`to_dict`."""
        s, t = d["search"], d["timings"]
        return cls(
            model=str(d["model"]),
            encoder=dict(d["encoder"]),
            pooling=str(d["pooling"]),
            text_variant=str(d["text_variant"]),
            aggregation=str(d["aggregation"]),
            n_components=d["n_components"],
            n_hidden_states=int(d["n_hidden_states"]),
            n_sentences=int(d["n_sentences"]),
            tasks=tuple(d["tasks"]),
            pairs=tuple(CombinationScore.from_dict(p) for p in d["pairs"]),
            by_size=tuple(SizeBest.from_dict(x) for x in d["by_size"]),
            include_embedding_layer=bool(s["include_embedding_layer"]),
            exhaustive_limit=int(s["exhaustive_limit"]),
            beam_width=int(s["beam_width"]),
            timings=LayerTimings(
                float(t["forward_s"]),
                bool(t["cache_hit"]),
                float(t["pairs_s"]),
                float(t["search_s"]),
                int(t["n_scored"]),
            ),
            combination=str(d.get("combination", COMBINATION_NOTE)),
            postprocessing=(None if d.get("postprocessing") is None else dict(d["postprocessing"])),
        )

    def to_markdown(self) -> str:
        """Markdown: settings, the Figure-1 grids, the Figure-2 table and the timings."""
        K = self.n_hidden_states
        lines = [
            f"# Layer analysis: {self.model} ({self.pooling} pooling)",
            "",
            f"- Tasks: {', '.join(self.tasks)} ({self.n_sentences} distinct sentences, "
            f"text variant `{self.text_variant}`); score = {self.aggregation} over "
            "subsets per task, then mean of the task scores (Spearman rho x 100).",
            f"- Hidden states 0..{K - 1} (0 = embedding output, {K - 1} = last layer); "
            f"{self.combination}.",
            (
                "- Whitening `year`: fitted per STS year on the sentences of all scored pairs of "
                "that year (STS-B / SICK-R: the test split), as in the paper"
                + ("" if self.n_components is None else f"; k = {self.n_components}")
                + "."
                if self.postprocessing is None
                else f"- Mode `year`: {self.year_method} instead of whitening, fitted per STS year "
                "on the sentences of all scored pairs of that year (STS-B / SICK-R: the test "
                "split), the paper's whitening protocol."
            ),
            "",
        ]
        for w in self.whitening_modes:
            M = self.pair_matrix(w)
            best = self.best_pair(w)
            heading = (
                f"whitening = {w}"
                if w != "year" or self.postprocessing is None
                else f"{self.year_method} per year"
            )
            lines += [
                f"## Figure 1: every pair (i, j), {heading}",
                "",
                f"Best single layer or pair: **{best.label}** = {best.average:.2f}.",
                "",
                "| i \\ j | " + " | ".join(f"L{j}" for j in range(K)) + " |",
                "|---|" + "---:|" * K,
            ]
            for i in range(K):
                cells = [f"{M[i, j]:.2f}" if j >= i else "" for j in range(K)]
                lines.append(f"| L{i} | " + " | ".join(cells) + " |")
            lines.append("")
        lines += ["## Figure 2: best combination per number of hidden states", ""]
        if not self.by_size:
            lines += ["Not searched (pairs only, `--max-combination 0`).", ""]
        else:
            lines += [
                "candidates: hidden states "
                + ("0" if self.include_embedding_layer else "1")
                + f"..{K - 1}; "
                f"exhaustive when C(K, m) <= {self.exhaustive_limit}, else beam search of "
                f"width {self.beam_width}.",
                "",
                "| whitening | m | best combination | avg | searched |"
                if self.postprocessing is None
                else f"| mode (year = {self.year_method}) | m | best combination | avg | "
                "searched |",
                "|---|---:|---|---:|---|",
            ]
        for s in self.by_size:
            lines.append(
                f"| {s.whitening} | {s.n_layers} | {s.best.label} | "
                f"{s.best.average:.2f} | {s.method} ({s.n_evaluated} of "
                f"{s.n_possible}) |"
            )
        t = self.timings
        lines += [
            "",
            "## Wall times",
            "",
            f"- per-layer vectors: {t.forward_s:.1f} s "
            f"({'disk cache hit' if t.cache_hit else 'one forward pass'})",
            f"- all pairs scored: {t.pairs_s:.1f} s; size search (extra combinations): "
            f"{t.search_s:.1f} s; {t.n_scored} (combination, whitening) scorings in all",
            "",
        ]
        return "\n".join(lines)
