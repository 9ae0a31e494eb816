"""WhiteningBERT Table 1 (Huang et al., 2021): its configurations, its rows and the report.

The one definition of Table 1's configurations (:data:`TABLE1_CONFIGS`: CLS / AVG pooling of the
last layer, AVG of L1, AVG of L1 + last), the five-row block that ``sentvec eval-sts`` prints
(:func:`table1_block`), the rows of ``sentvec report`` (:func:`table1_rows`, each configuration
without and with per-year whitening; :func:`sent2vec_rows` for an encoder without layers) and
the report's Markdown (:func:`render_report`). All rows come from the pooled per-layer vectors
of one forward pass. Also the report's post-processing table (:func:`postprocessing_rows`,
:func:`sif_rows`, :func:`postprocessing_markdown`): none / whitening / whitening-k / ABTT /
SIF / uSIF on the same vectors, every estimator fitted per STS year.
"""

from __future__ import annotations

import datetime
import platform
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from sentvec.evaluation.layer_results import layer_label
from sentvec.evaluation.layers import combine_layers, normalize_combination
from sentvec.evaluation.results import TABLE_COLUMNS, STSResult
from sentvec.evaluation.sts import STSScorer

__all__ = [
    "TABLE1_CONFIGS",
    "Table1Row",
    "table1_block",
    "table1_rows",
    "sent2vec_rows",
    "render_report",
    "describe_encoder_line",
    "POSTPROCESSING_METHODS",
    "PostprocessingRow",
    "postprocessing_rows",
    "sif_rows",
    "postprocessing_markdown",
]


#: (token label, pooling, layers) of WhiteningBERT Table 1; -1 is the last layer.
TABLE1_CONFIGS: tuple[tuple[str, str, tuple[int, ...]], ...] = (
    ("CLS", "cls", (-1,)),
    ("AVG", "mean", (-1,)),
    ("AVG", "mean", (1,)),
    ("AVG", "mean", (1, -1)),
)


@dataclass(frozen=True)
class Table1Row:
    """One row of a WhiteningBERT Table 1-style report.

    Attributes
    ----------
    model : str
    token : str
        "CLS", "AVG", or "-" for encoders without token pooling (Sent2Vec).
    layers : str
        "L6", "L1+L6", or "-" for encoders without layers.
    whitening : bool
        Fitted per STS year (the paper's protocol) when True.
    result : STSResult
        Holds all three aggregations (``scores_by_aggregation``).
    """

    model: str
    token: str
    layers: str
    whitening: bool
    result: Any

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable dict."""
        return {
            "model": self.model,
            "token": self.token,
            "layers": self.layers,
            "whitening": self.whitening,
            "result": self.result.to_dict(),
        }


def table1_block(
    per_layer: Mapping[str, np.ndarray],
    tasks: Sequence[Any],
    sentences: Sequence[str],
    *,
    n_components: int | None = None,
    aggregation: str = "mean",
    metadata: Mapping[str, Any] | None = None,
) -> dict[str, STSResult]:
    """The Table 1 block of ``sentvec eval-sts``: the four configurations, then the last one
    (AVG L1 + last) with per-year whitening.

    Parameters
    ----------
    per_layer : mapping of pooling to ndarray of shape (n, L + 1, d)
        ``"cls"`` and ``"mean"`` pooled vectors of every hidden state of ``sentences``.
    tasks, sentences
        As :func:`sentvec.evaluation.sts.score_sts`.
    n_components : int, optional
        Dimensions kept by the whitening of the last row.
    aggregation : {"mean", "wmean", "all"}
    metadata : mapping, optional
        The encoder's description; each row adds its pooling and layers.

    Returns
    -------
    dict of str to STSResult
        Row label (``"CLS  L6"``, ..., ``"AVG  L1+L6 + whitening"``) to its result, in order.
    """
    L = next(iter(per_layer.values())).shape[1] - 1
    configs = [
        (token, pooling, normalize_combination(layers, L + 1), "none")
        for token, pooling, layers in TABLE1_CONFIGS
    ]
    configs.append(configs[-1][:3] + ("year",))
    rows: dict[str, STSResult] = {}
    scorer = STSScorer(tasks, sentences)  # the index work once for the five rows
    for token, pooling, idx, whitening in configs:
        label = f"{token}  {layer_label(idx)}"
        if whitening == "year":
            label += " + whitening" + (f" (k={n_components})" if n_components else "")
        meta = {
            **(metadata or {}),
            "pooling": pooling,
            "layers": list(idx),
            "layer_indices": list(idx),
        }
        rows[label] = scorer.score(
            combine_layers(per_layer[pooling], idx),
            whitening=whitening,
            n_components=n_components if whitening == "year" else None,
            aggregation=aggregation,
            metadata=meta,
        )
    return rows


def table1_rows(
    model: str, per_layer: Mapping[str, np.ndarray], tasks: Sequence[Any], sentences: Sequence[str]
) -> tuple[Table1Row, ...]:
    """Table 1 rows (CLS/AVG x last layer / L1 / L1+last, each without and with whitening).

    Parameters
    ----------
    model : str
    per_layer : mapping of pooling to ndarray of shape (n, L + 1, d)
        Needs ``"cls"`` and ``"mean"`` (rows of a missing pooling are skipped).
    tasks, sentences
        As for :func:`sentvec.evaluation.sts.score_sts`.

    Returns
    -------
    tuple of Table1Row
        Table order, each configuration without then with whitening.
    """
    scorer = STSScorer(tasks, sentences)
    rows = []
    for token, pooling, layers in TABLE1_CONFIGS:
        if pooling not in per_layer:
            continue
        P = per_layer[pooling]
        idx = normalize_combination(layers, P.shape[1])
        emb = combine_layers(P, idx)
        for w in (False, True):
            res = scorer.score(emb, whitening="year" if w else "none")
            rows.append(Table1Row(model, token, layer_label(idx), w, res))
    return tuple(rows)


def sent2vec_rows(
    label: str, embeddings: np.ndarray, tasks: Sequence[Any], sentences: Sequence[str]
) -> tuple[Table1Row, ...]:
    """The report's rows of an encoder without token pooling or layers (Sent2Vec): its own
    sentence vectors ``embeddings`` (n, d) of ``sentences``, without and with the same per-year
    whitening."""
    emb = embeddings
    scorer = STSScorer(tasks, sentences)
    return tuple(
        Table1Row(label, "-", "-", w, scorer.score(emb, whitening="year" if w else "none"))
        for w in (False, True)
    )


#: Rows of the post-processing table, in order.
POSTPROCESSING_METHODS: tuple[str, ...] = (
    "none",
    "whitening",
    "whitening-k",
    "ABTT",
    "SIF",
    "uSIF",
)


@dataclass(frozen=True)
class PostprocessingRow:
    """One row of the report's post-processing table.

    Attributes
    ----------
    model : str
    vectors : str
        What was post-processed ("AVG L1+L6", "input token embeddings", "sentence vectors").
    method : str
        One of :data:`POSTPROCESSING_METHODS`.
    detail : str
        Its parameters ("k=128", "D=4", "a=0.001, 1 component").
    result : STSResult
    seconds : float
        Wall time of the row (encoding the SIF / uSIF averages and scoring).
    """

    model: str
    vectors: str
    method: str
    detail: str
    result: Any
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable dict."""
        return {
            "model": self.model,
            "vectors": self.vectors,
            "method": self.method,
            "detail": self.detail,
            "seconds": self.seconds,
            "result": self.result.to_dict(),
        }


def postprocessing_rows(
    model: str,
    vectors: str,
    embeddings: np.ndarray,
    tasks: Sequence[Any],
    sentences: Sequence[str],
    *,
    whitening_k: int | None = None,
    abtt_components: int | None = None,
) -> tuple[PostprocessingRow, ...]:
    """The none / whitening / whitening-k / ABTT rows of one set of sentence vectors.

    Every estimator is fitted per STS year on both sides of the year's scored pairs (the
    WhiteningBERT protocol, :meth:`STSScorer.score` with ``whitening="year"``).

    Parameters
    ----------
    model, vectors : str
        Row labels.
    embeddings : ndarray of shape (n, d)
        Vectors of ``sentences``.
    tasks, sentences
        As :func:`sentvec.evaluation.sts.score_sts`.
    whitening_k : int, optional
        ``k`` of the whitening-k row (default ``d // 3``, BERT-whitening's 768 -> 256 ratio).
    abtt_components : int, optional
        ``D`` of the ABTT row (default ``max(1, round(d / 100))``, Mu & Viswanath's rule).

    Returns
    -------
    tuple of PostprocessingRow
    """
    from sentvec.whitening import AllButTheTop, default_abtt_components

    d = int(np.shape(embeddings)[1])
    k = whitening_k if whitening_k is not None else max(1, d // 3)
    D = abtt_components if abtt_components is not None else default_abtt_components(d)
    scorer = STSScorer(tasks, sentences)
    specs = (
        ("none", "", dict(whitening="none")),
        ("whitening", "all d", dict(whitening="year")),
        ("whitening-k", f"k={k}", dict(whitening="year", n_components=k)),
        ("ABTT", f"D={D}", dict(whitening="year", postprocessor=AllButTheTop(D))),
    )
    rows = []
    for method, detail, kwargs in specs:
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # zero vectors: counted in the result
            res = scorer.score(embeddings, **kwargs)
        rows.append(
            PostprocessingRow(model, vectors, method, detail, res, time.perf_counter() - t0)
        )
    return tuple(rows)


def sif_rows(
    model: str,
    vectors: str,
    encoders: Sequence[Any],
    tasks: Sequence[Any],
    sentences: Sequence[str],
) -> tuple[PostprocessingRow, ...]:
    """The SIF / uSIF rows: each encoder's weighted averages, components removed per STS year.

    Parameters
    ----------
    model, vectors : str
    encoders : sequence of SIFEncoder / USIFEncoder
        Built with ``common_component="year"``.
    tasks, sentences
        As :func:`sentvec.evaluation.sts.score_sts`.

    Raises
    ------
    ValueError
        An encoder without ``common_component="year"``.
    """
    from sentvec.encoders.sif import USIFEncoder

    scorer = STSScorer(tasks, sentences)
    rows = []
    for enc in encoders:
        pp = enc.year_postprocessor()
        if pp is None:
            raise ValueError(f"{type(enc).__name__} needs common_component='year' here")
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            res = scorer.score(
                enc.encode(list(sentences)),
                whitening="year",
                postprocessor=pp,
                metadata=enc.config_dict(),
            )
        a = f"a={enc.a:.3g}" + (f" (n={enc.n})" if isinstance(enc, USIFEncoder) else "")
        detail = f"{a}, {enc.n_components} component{'s' * (enc.n_components > 1)}"
        rows.append(
            PostprocessingRow(
                model,
                vectors,
                "uSIF" if enc.method == "usif" else "SIF",
                detail,
                res,
                time.perf_counter() - t0,
            )
        )
    return tuple(rows)


def postprocessing_markdown(rows: Sequence[PostprocessingRow]) -> list[str]:
    """The post-processing table: seven STS tasks under ``mean``, then the ``mean`` and ``all``
    averages and the row's wall time (Markdown lines)."""

    def fmt(v: float) -> str:
        return "nan" if v != v else f"{v:.2f}"

    head = (
        ["Model", "vectors", "post-processing", "parameters"]
        + [h for _, h in TABLE_COLUMNS]
        + ["Avg. mean", "Avg. all", "wall s"]
    )
    lines = ["| " + " | ".join(head) + " |", "|---|---|---|---|" + "---:|" * 10]
    for r in rows:
        scores = r.result.task_scores_for("mean")
        cells = [fmt(scores[t]) if t in scores else "-" for t, _ in TABLE_COLUMNS]
        cells += [
            fmt(r.result.average_for("mean")),
            fmt(r.result.average_for("all")),
            f"{r.seconds:.1f}",
        ]
        lines.append(
            f"| {r.model} | {r.vectors} | {r.method} | {r.detail} | " + " | ".join(cells) + " |"
        )
    return lines


def describe_encoder_line(d: dict[str, Any]) -> str:
    """One line describing an encoder from its ``config_dict()`` (transformer or Sent2Vec)."""
    parts = []
    if d.get("num_layers") is not None:
        parts.append(f"{d['num_layers']} layers")
    dim = d.get("hidden_size", d.get("dim"))
    if dim is not None:
        parts.append(f"d = {dim}")
    if d.get("max_length") is not None:
        parts.append(f"max_length {d['max_length']}")
    args = d.get("args") or {}
    for key in ("wordNgrams", "epoch", "minCount"):
        if key in args:
            parts.append(f"{key} {args[key]}")
    if d.get("nwords") is not None:
        parts.append(f"{d['nwords']} words")
    name = d.get("source_model") or d.get("model") or d.get("source") or ""
    return f"{d.get('encoder', '')} {name}".strip() + (f" ({', '.join(parts)})" if parts else "")


def render_report(
    rows: Sequence[Table1Row],
    infos: Sequence[Mapping[str, Any]],
    skipped: Sequence[tuple[str, str]] = (),
    *,
    command: str,
    postprocessing: Sequence[PostprocessingRow] = (),
    postprocessing_notes: Sequence[str] = (),
) -> str:
    """Markdown of the ``sentvec report`` page (``docs/REPRODUCTION.md``).

    Parameters
    ----------
    rows : sequence of Table1Row
        From :func:`table1_rows` and :func:`sent2vec_rows`.
    infos : sequence of dict
        One per encoder: ``model``, ``description`` (its ``config_dict()``), ``text_variant``,
        ``n_sentences``, ``vectors_s``, ``cache_hit``, ``scoring_s``.
    skipped : sequence of (name, reason)
    command : str
        The command line that produced the report (stated in it).
    postprocessing : sequence of PostprocessingRow, optional
        From :func:`postprocessing_rows` and :func:`sif_rows`: adds the "Post-processing"
        section.
    postprocessing_notes : sequence of str
        Lines stated under that table (where the counts come from, build times).

    Returns
    -------
    str
        Markdown: the rows under each of the three aggregations, the averages side by side,
        the encoders and the protocol.
    """
    from sentvec import __version__

    lines = [
        "# Reproduction report: WhiteningBERT Table 1 protocol",
        "",
        f"Generated by `{command}` (sentvec {__version__}, Python "
        f"{platform.python_version()}, {platform.machine()}) on "
        f"{datetime.date.today().isoformat()}.",
        "",
        "Protocol (docs/whiteningbert.md): cosine similarity, Spearman rho x 100; STS12-16 "
        "scored per subset; STS-B and SICK-R test splits. Whitening (T) is fitted per STS "
        "year on both sentences of all scored pairs of that year (STS-B / SICK-R: the test "
        "split), as the authors do (transductive). token=AVG: mean over all real tokens "
        "including [CLS]/[SEP]; token=CLS: first token's hidden state; L0 = embedding "
        "output; a layer combination is the mean of the pooled per-layer vectors. All rows "
        "of one model come from one forward pass (per-layer vectors, cached).",
        "",
    ]
    lines += _score_sections(rows)
    if postprocessing:
        lines += _postprocessing_section(postprocessing, postprocessing_notes)
    lines += _encoder_section(infos, skipped)
    lines += [
        "",
        "## Context",
        "",
        "The paper's rows are raw MLM-pretrained models (BERT-base, RoBERTa, DistilBERT, "
        "LaBSE; MiniLM in appendix Table 2: 55.30 -> 66.51 for L1+L12 without -> with "
        "whitening). None of those is installable here; the models above are "
        "sentence-transformers checkpoints already fine-tuned for similarity "
        "(all-MiniLM-L6-v2: 6 layers, 384-d), so absolute numbers are not comparable with "
        "Table 1 and whitening is not expected to help them as much. A Sent2Vec model has "
        "neither token pooling nor layers: its row is its own sentence vector, without and "
        "with the same per-year whitening.",
        "",
    ]
    return "\n".join(lines)


def _fmt(v: float) -> str:
    return "nan" if v != v else f"{v:.2f}"


def _score_sections(rows: Sequence[Table1Row]) -> list[str]:
    """The report's rows under each of the three aggregations, then their averages side by
    side."""
    head = ["Model", "token", "layer", "whitening"] + [h for _, h in TABLE_COLUMNS] + ["Avg."]
    lines: list[str] = []
    for agg, title in (
        ("mean", "unweighted mean over the subsets of a year (WhiteningBERT)"),
        ("wmean", "mean weighted by subset size (SentEval, BERT-whitening)"),
        ("all", "Spearman over all subsets concatenated (SimCSE)"),
    ):
        lines += [
            f"## Aggregation `{agg}`: {title}",
            "",
            "| " + " | ".join(head) + " |",
            "|---|---|---|---|" + "---:|" * 8,
        ]
        for r in rows:
            scores = r.result.task_scores_for(agg)
            cells = [_fmt(scores[t]) if t in scores else "-" for t, _ in TABLE_COLUMNS]
            cells.append(_fmt(r.result.average_for(agg)))
            lines.append(
                f"| {r.model} | {r.token} | {r.layers} | {'T' if r.whitening else 'F'} | "
                + " | ".join(cells)
                + " |"
            )
        lines.append("")
    lines += [
        "## Averages side by side",
        "",
        "| Model | token | layer | whitening | Avg. mean | Avg. wmean | Avg. all |",
        "|---|---|---|---|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r.model} | {r.token} | {r.layers} | {'T' if r.whitening else 'F'} | "
            + " | ".join(_fmt(r.result.average_for(a)) for a in ("mean", "wmean", "all"))
            + " |"
        )
    return lines


def _postprocessing_section(
    postprocessing: Sequence[PostprocessingRow], notes: Sequence[str]
) -> list[str]:
    """The report's "Post-processing" section: what each method is, its table, the notes."""
    lines = [
        "",
        "## Post-processing: whitening, all-but-the-top, SIF, uSIF",
        "",
        "Aggregation `mean` per task; every estimator fitted per STS year on both "
        "sentences of all the year's scored pairs (duplicates kept), as the whitening "
        "rows above. whitening: WhiteningBERT Eq. 1, all dimensions; whitening-k: "
        "BERT-whitening's first k components; ABTT: all-but-the-top (Mu & Viswanath "
        "2018), centre and remove the top D principal components; SIF (Arora et al. "
        "2017): weights a/(a + p(w)), first singular direction of the uncentred "
        "matrix removed; uSIF (Ethayarajh 2018): weights a/(a/2 + p(w)) on unit word "
        "vectors, a derived from the vocabulary (n = 11), top 5 directions removed "
        "weighted by their singular values' share. wall s: scoring (and, for SIF / "
        "uSIF, computing the averages) of that row.",
        "",
    ]
    lines += postprocessing_markdown(postprocessing)
    if notes:
        lines += [""] + [f"- {n}" for n in notes]
    return lines


def _encoder_section(
    infos: Sequence[Mapping[str, Any]], skipped: Sequence[tuple[str, str]]
) -> list[str]:
    """The report's "Encoders" section (and "Skipped", when a model was)."""
    lines = ["", "## Encoders", ""]
    for i in infos:
        lines.append(
            f"- **{i['model']}**: {describe_encoder_line(i['description'])}; text "
            f"`{i['text_variant']}`, {i['n_sentences']} distinct sentences; vectors "
            f"{i['vectors_s']:.1f} s ({'cache hit' if i['cache_hit'] else 'computed'}), "
            f"scoring {i['scoring_s']:.1f} s."
        )
    if skipped:
        lines += ["", "## Skipped", ""]
        lines += [f"- **{name}**: {why}" for name, why in skipped]
    return lines
