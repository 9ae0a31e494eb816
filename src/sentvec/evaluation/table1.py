"""WhiteningBERT Table 1 (Huang et al., 2021): its configurations, its rows and the report.

The one definition of Table 1's configurations (:data:`TABLE1_CONFIGS`: CLS / AVG pooling of the
last layer, AVG of L1, AVG of L1 + last), the five-row block that ``sentvec eval-sts`` prints
(:func:`table1_block`), the rows of ``sentvec report`` (:func:`table1_rows`, each configuration
without and with per-year whitening; :func:`sent2vec_rows` for an encoder without layers) and
the report's Markdown (:func:`render_report`). All rows come from the pooled per-layer vectors
of one forward pass.
"""

from __future__ import annotations

import datetime
import platform
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from sentvec.evaluation.layer_results import layer_label
from sentvec.evaluation.layers import combine_layers, normalize_combination
from sentvec.evaluation.results import TABLE_COLUMNS, STSResult
from sentvec.evaluation.sts import STSScorer, score_sts

__all__ = ["TABLE1_CONFIGS", "Table1Row", "table1_block", "table1_rows", "sent2vec_rows",
           "render_report", "describe_encoder_line"]


#: (token label, pooling, layers) of WhiteningBERT Table 1; -1 is the last layer.
TABLE1_CONFIGS: tuple[tuple[str, str, tuple[int, ...]], ...] = (
    ("CLS", "cls", (-1,)), ("AVG", "mean", (-1,)), ("AVG", "mean", (1,)),
    ("AVG", "mean", (1, -1)))


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
        return {"model": self.model, "token": self.token, "layers": self.layers,
                "whitening": self.whitening, "result": self.result.to_dict()}


def table1_block(per_layer: Mapping[str, np.ndarray], tasks: Sequence[Any],
                 sentences: Sequence[str], *, n_components: int | None = None,
                 aggregation: str = "mean",
                 metadata: Mapping[str, Any] | None = None) -> dict[str, STSResult]:
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
    configs = [(token, pooling, normalize_combination(layers, L + 1), "none")
               for token, pooling, layers in TABLE1_CONFIGS]
    configs.append(configs[-1][:3] + ("year",))
    rows: dict[str, STSResult] = {}
    for token, pooling, idx, whitening in configs:
        label = f"{token}  {layer_label(idx)}"
        if whitening == "year":
            label += " + whitening" + (f" (k={n_components})" if n_components else "")
        meta = {**(metadata or {}), "pooling": pooling, "layers": list(idx),
                "layer_indices": list(idx)}
        rows[label] = score_sts(
            tasks, sentences, combine_layers(per_layer[pooling], idx), whitening=whitening,
            n_components=n_components if whitening == "year" else None,
            aggregation=aggregation, metadata=meta)
    return rows


def table1_rows(model: str, per_layer: Mapping[str, np.ndarray], tasks: Sequence[Any],
                sentences: Sequence[str]) -> tuple[Table1Row, ...]:
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


def sent2vec_rows(label: str, embeddings: np.ndarray, tasks: Sequence[Any],
                  sentences: Sequence[str]) -> tuple[Table1Row, ...]:
    """The report's rows of an encoder without token pooling or layers (Sent2Vec): its own
    sentence vectors ``embeddings`` (n, d) of ``sentences``, without and with the same per-year
    whitening."""
    emb = embeddings
    scorer = STSScorer(tasks, sentences)
    return tuple(Table1Row(label, "-", "-", w, scorer.score(emb, whitening="year" if w else "none"))
                 for w in (False, True))


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


def render_report(rows: Sequence[Table1Row], infos: Sequence[Mapping[str, Any]],
                  skipped: Sequence[tuple[str, str]] = (), *, command: str) -> str:
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

    Returns
    -------
    str
        Markdown: the rows under each of the three aggregations, the averages side by side,
        the encoders and the protocol.
    """
    from sentvec import __version__

    def fmt(v: float) -> str:
        return "nan" if v != v else f"{v:.2f}"

    head = ["Model", "token", "layer", "whitening"] + [h for _, h in TABLE_COLUMNS] + ["Avg."]
    lines = ["# Reproduction report: WhiteningBERT Table 1 protocol", "",
             f"Generated by `{command}` (sentvec {__version__}, Python "
             f"{platform.python_version()}, {platform.machine()}) on "
             f"{datetime.date.today().isoformat()}.", "",
             "Protocol (docs/whiteningbert.md): cosine similarity, Spearman rho x 100; STS12-16 "
             "scored per subset; STS-B and SICK-R test splits. Whitening (T) is fitted per STS "
             "year on both sentences of all scored pairs of that year (STS-B / SICK-R: the test "
             "split), as the authors do (transductive). token=AVG: mean over all real tokens "
             "including [CLS]/[SEP]; token=CLS: first token's hidden state; L0 = embedding "
             "output; a layer combination is the mean of the pooled per-layer vectors. All rows "
             "of one model come from one forward pass (per-layer vectors, cached).", ""]
    for agg, title in (("mean", "unweighted mean over the subsets of a year (WhiteningBERT)"),
                       ("wmean", "mean weighted by subset size (SentEval, BERT-whitening)"),
                       ("all", "Spearman over all subsets concatenated (SimCSE)")):
        lines += [f"## Aggregation `{agg}`: {title}", "",
                  "| " + " | ".join(head) + " |", "|---|---|---|---|" + "---:|" * 8]
        for r in rows:
            scores = r.result.task_scores_for(agg)
            cells = [fmt(scores[t]) if t in scores else "-" for t, _ in TABLE_COLUMNS]
            cells.append(fmt(r.result.average_for(agg)))
            lines.append(f"| {r.model} | {r.token} | {r.layers} | {'T' if r.whitening else 'F'} | "
                         + " | ".join(cells) + " |")
        lines.append("")
    lines += ["## Averages side by side", "",
              "| Model | token | layer | whitening | Avg. mean | Avg. wmean | Avg. all |",
              "|---|---|---|---|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r.model} | {r.token} | {r.layers} | {'T' if r.whitening else 'F'} | "
                     + " | ".join(fmt(r.result.average_for(a)) for a in ("mean", "wmean", "all"))
                     + " |")
    lines += ["", "## Encoders", ""]
    for i in infos:
        lines.append(f"- **{i['model']}**: {describe_encoder_line(i['description'])}; text "
                     f"`{i['text_variant']}`, {i['n_sentences']} distinct sentences; vectors "
                     f"{i['vectors_s']:.1f} s ({'cache hit' if i['cache_hit'] else 'computed'}), "
                     f"scoring {i['scoring_s']:.1f} s.")
    if skipped:
        lines += ["", "## Skipped", ""]
        lines += [f"- **{name}**: {why}" for name, why in skipped]
    lines += ["", "## Context", "",
              "The paper's rows are raw MLM-pretrained models (BERT-base, RoBERTa, DistilBERT, "
              "LaBSE; MiniLM in appendix Table 2: 55.30 -> 66.51 for L1+L12 without -> with "
              "whitening). None of those is installable here; the models above are "
              "sentence-transformers checkpoints already fine-tuned for similarity "
              "(all-MiniLM-L6-v2: 6 layers, 384-d), so absolute numbers are not comparable with "
              "Table 1 and whitening is not expected to help them as much. A Sent2Vec model has "
              "neither token pooling nor layers: its row is its own sentence vector, without and "
              "with the same per-year whitening.", ""]
    return "\n".join(lines)
